"""Gradient clipping: by global norm, applied by the optimizer pass before the update."""

from paddlec import errors

__all__ = ["GradientClipByGlobalNorm"]


class GradientClipByGlobalNorm:
    """Scales all gradients by clip_norm / max(global_norm, clip_norm)."""

    def __init__(self, clip_norm):
        clip_norm = float(clip_norm)
        if not clip_norm > 0:
            raise errors.make(errors.InvalidArgumentError, "clip_norm must be > 0, got %r" % clip_norm)
        self.clip_norm = clip_norm

    def __repr__(self):
        return "GradientClipByGlobalNorm(%r)" % self.clip_norm
