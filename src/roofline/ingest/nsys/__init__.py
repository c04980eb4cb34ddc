"""Nsight Systems exports (SQLite): launches, NVTX ranges and ranks."""
