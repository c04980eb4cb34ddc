"""XLA profiles: XSpace ``xplane.pb`` (TPU and GPU), XLA's cost analysis, XProf trace-viewer JSON."""
