"""AMD profilers: rocprof-compute workloads, rocprofv3 JSON/CSV and rocpd SQLite, and the AMD architecture model they share."""
