"""Small builders of test inputs (shared libraries, offload bundles, wheels)."""
