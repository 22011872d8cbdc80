"""rocm-buildkit: recipe -> plan -> image -> build -> inspect -> gate -> publish."""

__version__ = "0.1.0"
