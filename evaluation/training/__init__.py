"""Training recipes for the models Cairn ships (``manage.py train_reranker``); docs/models.md.

Only the training venv (``requirements-train.txt``) has PyTorch; nothing here is imported by the
product, which loads the exported ONNX weights with onnxruntime.
"""
