"""An inference-only PyTorch implementation of the VITS generator as Piper voices use it.

``weights.load_voice_weights`` reads a voice (``.onnx`` or ``.ckpt``) and
``weights.build_generator`` turns it into a ``generator.VitsGenerator``;
``runner`` runs it in padded batches and overlapping windows, and the engine
in ``tts.inference.vits_torch`` serves it.
"""
