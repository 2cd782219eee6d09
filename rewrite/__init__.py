"""Graph passes over exported ONNX training graphs: fuse the ELU backward into
``ai.ortops::EluGrad`` and lower EluGrad back to standard ONNX (see issue "rewrite")."""
