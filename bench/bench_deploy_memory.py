"""Resident memory per container and per process of the compose stack, every language used once.

Run by `make deploy-check` against the stack it brought up (deploy/check/compose.sh), or by hand
against any running one (podman, rootful: it reads the containers' processes from the host's /proc
and their cgroups). Speaks, through each service that synthesizes:

- web (ElevenLabs API, fresh connections, so both daphne processes of the container get each
  language in turn): joe, and one Kokoro voice per language (en, es, fr, hi, it, ja, pt, zh), a few
  different sentences each so the audio cache does not answer;
- wyoming: the same voices over the Wyoming protocol;
- worker: one job per language.

Then reports, per container, the cgroup's memory now and at its peak, and per process VmRSS and
VmHWM (peak), as a markdown table (stdout and --out). The figures set compose.yaml's mem_limit and
the Kubernetes requests/limits (docs/deploy.md).

    python bench/bench_deploy_memory.py --base http://127.0.0.1:PORT --wyoming 127.0.0.1:PORT \\
        --credentials var/deploy/credentials.json --project ttsdeploycheck [--out FILE] [--rounds 4]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "deploy" / "check"))
from bench_startup import memory_mb  # noqa: E402
from bench_voices_memory import SENTENCES  # noqa: E402
from clients import (  # noqa: E402
    assert_speech,
    decode,
    elevenlabs_client,
    submit_job,
    wait_job,
    wyoming_synthesize,
)

TEXTS = json.loads((ROOT / "bench" / "texts.json").read_text())
#: (voice, language, sentence): joe, then one Kokoro voice per language it reads.
VOICES = [
    ("joe", "en", TEXTS["short"]),
    ("af_heart", "en", TEXTS["short"]),
    ("ef_dora", "es", SENTENCES["es"]),
    ("ff_siwis", "fr", SENTENCES["fr"]),
    ("hf_alpha", "hi", SENTENCES["hi"]),
    ("if_sara", "it", SENTENCES["it"]),
    ("jf_alpha", "ja", SENTENCES["ja"]),
    ("pf_dora", "pt", SENTENCES["pt"]),
    ("zf_xiaoxiao", "zh", TEXTS["zh_short"]),
]
#: Appended in turn so each request is a new text (no cache hit) in the same language.
VARIANTS = {"ja": ["", "今日は", "明日も", "また"], "zh": ["", "你好", "今天", "我们"]}


def variant(language: str, text: str, n: int) -> str:
    prefixes = VARIANTS.get(language)
    if prefixes:
        return prefixes[n % len(prefixes)] + text
    return text if n == 0 else f"{text} ({n + 1})" if language == "hi" else f"{n + 1}. {text}"


def containers(project: str) -> dict[str, str]:
    """Service name -> container id of the compose project's running containers."""
    out = subprocess.run(
        [
            "podman",
            "ps",
            "--filter",
            f"label=io.podman.compose.project={project}",
            "--format",
            '{{.ID}} {{index .Labels "com.docker.compose.service"}}',
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return {service: cid for cid, service in (line.split() for line in out.splitlines() if line.strip())}


def cgroup_dir(cid: str) -> Path:
    """The container's memory cgroup (v1 here, as podman makes it with cgroupfs; v2 elsewhere)."""
    full = subprocess.run(
        ["podman", "inspect", "--format", "{{.Id}}", cid], check=True, capture_output=True, text=True
    ).stdout.strip()
    for base in (Path("/sys/fs/cgroup/memory"), Path("/sys/fs/cgroup")):
        for found in base.glob(f"**/*{full}*"):
            if found.is_dir() and ((found / "memory.usage_in_bytes").exists() or (found / "memory.current").exists()):
                return found
    raise FileNotFoundError(f"no memory cgroup for container {cid}")


def cgroup_mb(directory: Path) -> tuple[float, float]:
    """(now, peak) of the cgroup's charged memory (RSS and page cache), in MB."""

    def read(*names: str) -> float:
        for name in names:
            path = directory / name
            if path.exists():
                return int(path.read_text().split()[0]) / 2**20
        return float("nan")

    return read("memory.usage_in_bytes", "memory.current"), read("memory.max_usage_in_bytes", "memory.peak")


def processes(directory: Path) -> list[tuple[int, str]]:
    pids = sorted({int(p) for p in (directory / "cgroup.procs").read_text().split()})
    found = []
    for pid in pids:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        except OSError:
            continue
        found.append((pid, cmd))
    return found


def short(cmd: str) -> str:
    for marker, name in (
        ("daphne", "daphne"),
        ("ttsplatform.serve", "serve (supervisor)"),
        ("celery", "celery"),
        ("wyoming_server", "wyoming_server"),
        ("postgres", "postgres"),
        ("redis-server", "redis-server"),
    ):
        if marker in cmd:
            return name
    return cmd.split(" ")[0][-30:]


def speak_web(base: str, key: str, rounds: int) -> None:
    for n in range(rounds):
        for voice, language, text in VOICES:
            client = elevenlabs_client(base, key)  # a new client: a new connection, either process
            phrase = variant(language, text, n)
            data = b"".join(
                client.text_to_speech.convert(
                    voice_id=voice, text=phrase, output_format="pcm_24000", language_code=language
                )
            )
            assert_speech(decode(data, "pcm_24000"), rate=24000, text=phrase, what=f"web {voice} ({language})")


def speak_wyoming(host: str, port: int) -> None:
    for voice, language, text in VOICES:
        audio = asyncio.run(wyoming_synthesize(host, port, variant(language, text, 7), voice=voice))
        assert_speech(audio, rate=audio.rate, text=text, what=f"wyoming {voice} ({language})")


def run_jobs(base: str, key: str) -> None:
    for voice, language, text in VOICES:
        job_id = submit_job(base, key, variant(language, text, 9), voice=voice)
        state = wait_job([base], key, job_id, timeout=300)
        if state["status"] != "succeeded":
            raise SystemExit(f"job {voice} ({language}): {state}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True)
    parser.add_argument("--wyoming", required=True)
    parser.add_argument("--credentials", required=True)
    parser.add_argument("--project", required=True)
    parser.add_argument("--rounds", type=int, default=4, help="requests per voice through the web")
    parser.add_argument("--out")
    args = parser.parse_args()
    key = json.loads(Path(args.credentials).read_text())["key"]
    host, _, port = args.wyoming.rpartition(":")

    speak_web(args.base, key, args.rounds)
    speak_wyoming(host, int(port))
    run_jobs(args.base, key)

    lines = [
        "| container | cgroup now MB | cgroup peak MB | process | VmRSS MB | VmHWM MB |",
        "|---|---:|---:|---|---:|---:|",
    ]
    for service, cid in sorted(containers(args.project).items()):
        directory = cgroup_dir(cid)
        now, peak = cgroup_mb(directory)
        first = True
        for pid, cmd in processes(directory):
            try:
                rss, hwm = memory_mb(pid)
            except (OSError, KeyError):
                continue
            cells = f"{service} | {now:.0f} | {peak:.0f}" if first else " | | "
            lines.append(f"| {cells} | {short(cmd)} | {rss:.0f} | {hwm:.0f} |")
            first = False
    table = "\n".join(lines)
    print(table)
    if args.out:
        Path(args.out).write_text(table + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
