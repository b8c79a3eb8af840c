"""Model files and shapes: the GGUF reader (`gguf`), the numbers llama.cpp can load
(`hparams`), the embedded default model (`embedded`), finding and describing a model file
(`files`), synthetic models (`synthetic`), published shapes (`catalog`) and what a shape costs
in KV cache under llama.cpp's rules (`kv`)."""
