"""Audio output: format names (formats), streaming resampling (resample), incremental encoders (encode)."""
