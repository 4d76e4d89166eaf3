"""Speech synthesis: voices, model versions, the pipeline, history, jobs and the APIs."""
