"""PyTorch profiler (Kineto) traces: the streamed decode, the one scan, the op rows and the CUDA/HIP-graph capture join."""
