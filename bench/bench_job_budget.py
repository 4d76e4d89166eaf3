"""What a long-form job costs in engine-seconds, to set ``TTS_MAX_ENGINE_SECONDS_PER_JOB`` from measurement.

For each voice and text of ``../shared/bench/texts.json``: the audio a whole request makes per
character sent, the engine-seconds that audio costs at the engine's factor (the unit a job's budget
charges), and both scaled to the default plan's ``job_max_characters``; beside them, the low
estimate a job is admitted by. Then the same for a hostile text ("$9,999,999.99 " repeated: it
prepares to about 7 times its length): billed characters and engine-seconds per billed character.

    .venv/bin/python bench/bench_job_budget.py --voices joe,af_heart,zf_xiaoxiao

Prints a markdown table (docs/benchmarks.md, "Engine time of a long-form job").
"""

from __future__ import annotations

import argparse
import functools
import json

from in_process import ROOT, bench_tenant, import_kokoro, setup_with_joe

TEXTS = json.loads((ROOT.parent / "shared" / "bench" / "texts.json").read_text())
HOSTILE = "$9,999,999.99 " * 40
VOICE_TEXTS = {"joe": ["long"], "af_heart": ["long"], "zf_xiaoxiao": ["zh_medium"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--voices", default="joe,af_heart,zf_xiaoxiao")
    args = parser.parse_args()
    setup_with_joe("bench-job-budget")
    voices = [v.strip() for v in args.voices.split(",") if v.strip()]
    if any(v != "joe" for v in voices):
        import_kokoro("bench-job-budget")
    from accounts.models import Plan
    from tts.audio.formats import parse_elevenlabs_format
    from tts.synthesis import SynthesisRequest, job_prepare, job_resolve, synthesis_create
    from tts.synthesis.engine_time.budget import low_speech_seconds
    from tts.synthesis.engine_time.cost import engine_cost_factor
    from tts.synthesis.stages.estimate import effective_speed

    tenant, _ = bench_tenant("bench-job-budget", max_engine_seconds_per_request=10**6, max_engine_seconds_per_job=10**9)
    job_chars = Plan._meta.get_field("job_max_characters").default
    print(
        "| voice | text | characters sent | billed | audio s/char | engine-s/billed char "
        f"| engine-s for {job_chars:,} chars | admission estimate for them |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for voice in voices:
        for name in [*VOICE_TEXTS.get(voice, ["long"]), "hostile"]:
            text = HOSTILE if name == "hostile" else TEXTS[name]
            req = SynthesisRequest(
                tenant=tenant,
                voice_id=voice,
                text=text,
                output_format=parse_elevenlabs_format("pcm_24000"),
                source="job",
            )
            v, version, dictionaries = job_resolve(req)
            prepared = job_prepare(req, [("text", text)], v, version, dictionaries)
            result = synthesis_create(req)
            audio = len(result.audio) / 2 / result.output_format.sample_rate
            factor = engine_cost_factor(version.engine)
            per_char = audio / len(text)
            billed = prepared.characters
            estimate = (
                low_speech_seconds(
                    prepared.texts[0].segments,
                    functools.partial(effective_speed, 1.0),
                    language=prepared.texts[0].language,
                )
                * factor
            )
            scale = job_chars / len(text)
            print(
                f"| {voice} ({version.engine}) | {name} | {len(text)} | {billed} | {per_char:.4f} | "
                f"{audio * factor / billed:.4f} | {audio * factor * scale:,.0f} | {estimate * scale:,.0f} |"
            )


if __name__ == "__main__":
    main()
