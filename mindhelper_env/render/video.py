"""Write rendered frames to GIF or MP4 files with imageio.

:func:`write_video` takes ``uint8`` frames of shape ``(H, W, 3)`` (e.g. from
:class:`~mindhelper_env.render.topdown.TopDownRenderer`) and writes

* ``.gif`` with imageio's Pillow plugin (looping forever). Pillow merges identical consecutive
  frames into one longer frame, so reading a GIF back can give fewer frames than were written
  (the timing is kept); or
* ``.mp4`` (H.264, ``yuv420p`` so that every player opens it) with imageio-ffmpeg, using
  ``macro_block_size=1`` so frames keep their size. ``yuv420p`` needs even sides: a frame with
  an odd width or height gets one extra column/row copied from its edge.

The file appears atomically: frames go to a temporary file in the same folder that replaces
``path`` only once it is complete. imageio (and imageio-ffmpeg for MP4) are imported lazily
(``video`` extra).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["write_video", "VIDEO_FORMATS"]

log = logging.getLogger(__name__)

_INSTALL_HINT = "install the video extra: pip install 'mindhelper-env[video]'"

#: File extensions :func:`write_video` can write.
VIDEO_FORMATS = (".gif", ".mp4")
#: Frame rates :func:`write_video` accepts (ffmpeg fails on absurd ones, dumping its log).
MIN_FPS, MAX_FPS = 0.1, 120.0


def _check_frames(frames: Iterable[Any]) -> list[np.ndarray]:
    out: list[np.ndarray] = []
    shape: tuple[int, ...] | None = None
    for i, f in enumerate(frames):
        a = np.asarray(f)
        if a.dtype != np.uint8:
            raise ValueError(f"frame {i} has dtype {a.dtype}; frames must be uint8")
        if a.ndim != 3 or a.shape[2] != 3:
            raise ValueError(f"frame {i} has shape {a.shape}; frames must be (H, W, 3)")
        if shape is None:
            shape = a.shape
        elif a.shape != shape:
            raise ValueError(f"frame {i} has shape {a.shape}, but frame 0 has {shape}")
        out.append(a)
    if not out:
        raise ValueError("no frames to write")
    return out


def _even(frame: np.ndarray) -> np.ndarray:
    h, w = frame.shape[:2]
    if h % 2 == 0 and w % 2 == 0:
        return frame
    return np.pad(frame, ((0, h % 2), (0, w % 2), (0, 0)), mode="edge")


def check_output_path(path: str | os.PathLike[str], formats: Sequence[str], *,
                      kind: str = "file") -> Path:
    """Check an output file path before any work is done.

    Raises ``ValueError`` for an extension not in ``formats``, ``FileNotFoundError`` when the
    folder does not exist and ``PermissionError`` when it is not writable.
    """
    p = Path(path)
    if p.suffix.lower() not in formats:
        raise ValueError(f"unsupported {kind} extension {p.suffix or '(none)'!r} for {p}; "
                         f"use one of {', '.join(formats)}")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise FileNotFoundError(f"cannot write {p}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise PermissionError(f"cannot write {p}: folder {parent} is not writable")
    return p


def write_video(
    frames: Iterable[Any],
    path: str | os.PathLike[str],
    fps: float = 4,
    *,
    quality: int = 8,
) -> Path:
    """Write ``frames`` to a ``.gif`` or ``.mp4`` file and return its path.

    Parameters
    ----------
    frames:
        ``uint8`` arrays of shape ``(H, W, 3)``, all the same shape (at least one).
    path:
        output file; the extension chooses the format. Its folder must exist and be writable.
    fps:
        frames per second (> 0).
    quality:
        MP4 quality, 0 (smallest) to 10 (best); text stays crisp at the default 8.

    Raises
    ------
    ValueError
        an unsupported extension or bad frames.
    FileNotFoundError
        the folder does not exist.
    PermissionError
        the folder is not writable.
    """
    p = check_output_path(path, VIDEO_FORMATS, kind="video")
    ext = p.suffix.lower()
    if isinstance(fps, bool) or not isinstance(fps, (int, float)) \
            or not MIN_FPS <= fps <= MAX_FPS:
        raise ValueError(f"fps must be a number between {MIN_FPS:g} and {MAX_FPS:g}, "
                         f"got {fps!r}")
    if not 0 <= quality <= 10:
        raise ValueError(f"quality must be between 0 and 10, got {quality}")
    parent = p.parent if str(p.parent) else Path(".")
    data = _check_frames(frames)
    try:
        import imageio.v2 as imageio
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(f"write_video needs imageio; {_INSTALL_HINT}") from err

    tmp = parent / f".{p.stem}.{os.getpid()}.tmp{ext}"
    try:
        if ext == ".gif":
            # Pillow plugin: duration per frame in milliseconds, loop=0 loops forever
            imageio.mimwrite(tmp, data, format="GIF", duration=1000.0 / fps, loop=0)
        else:
            try:
                import imageio_ffmpeg  # noqa: F401  (imageio's ffmpeg plugin needs it)
            except ImportError as err:  # pragma: no cover - depends on the environment
                raise ImportError(f"writing MP4 needs imageio-ffmpeg; {_INSTALL_HINT}") from err
            try:
                writer = imageio.get_writer(
                    tmp, format="FFMPEG", mode="I", fps=float(fps), codec="libx264",
                    pixelformat="yuv420p", macro_block_size=1, quality=quality,
                    ffmpeg_log_level="error",
                )
                try:
                    for frame in data:
                        writer.append_data(_even(frame))
                finally:
                    writer.close()
            except (OSError, RuntimeError) as err:
                # ffmpeg's whole log is in the message: keep its first line, log the rest.
                log.debug("ffmpeg failed writing %s: %s", p, err)
                first = next((ln for ln in str(err).splitlines() if ln.strip()), "")
                raise OSError(f"ffmpeg could not write {p}: {first[:200]}") from None
        os.replace(tmp, p)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    log.debug("wrote %d frames to %s", len(data), p)
    return p
