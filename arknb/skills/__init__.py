"""Skills (placeholder while the seam is built)."""

__all__ = ["skills_extension"]


def skills_extension(value):
    return None
