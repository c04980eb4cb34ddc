"""Nsight Compute: binary reports through NVIDIA's ``ncu_report`` and ``ncu --csv`` exports."""
