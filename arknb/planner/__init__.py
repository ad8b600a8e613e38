"""Planning (placeholder while the seam is built)."""

__all__ = ["plan_extension"]


def plan_extension(value):
    return None
