"""Operator models: FLOPs and bytes of a PyTorch trace's ops, from their recorded shapes."""
