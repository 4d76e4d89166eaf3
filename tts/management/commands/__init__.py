"""import_piper_voice, setup_demo, activate_model."""
