"""The probes study (docs/guide/probes.md)."""
