"""Frames of every environment for ``render_mode="rgb_array"`` and ``"human"``.

A frame is a title line over two bar-chart panels, each described as data (:class:`Panel`,
:class:`Series`) by its environment's ``render()`` and drawn here on matplotlib's Agg canvas
(``Figure`` + ``FigureCanvasAgg``, never pyplot), so it works headless and never touches the
global backend. The frame is an RGB ``uint8`` array of :data:`HEIGHT` x :data:`WIDTH` (even
sizes, as ffmpeg's yuv420p needs), what Gymnasium's ``RecordVideo``, SB3's ``VecVideoRecorder``
and CleanRL's ``--capture-video`` record.

``"human"`` draws the same frame and shows it in one pyplot window per environment (nothing is
shown, and nothing waits, on a non-interactive backend such as Agg on a headless machine).

Each environment keeps one :class:`FrameRenderer` (made at its first frame); the renderer
pickles and copies without its figures, so ``AsyncVectorEnv`` / ``SubprocVecEnv`` can pickle
an environment that has rendered. matplotlib is imported at the first frame only.
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

#: What ``render_mode`` may be besides ``None`` (every environment's ``metadata``).
RENDER_MODES = ("ansi", "rgb_array", "human")
WIDTH = 640
HEIGHT = 360
DPI = 100
_ATTR = "_frame_renderer"
_NON_INTERACTIVE = {"agg", "cairo", "pdf", "pgf", "ps", "svg", "template"}
_MAX_TICK_LABELS = 16
_LEGEND_ROOM = 0.25  # of the y range, above it


class Series(NamedTuple):
    """One set of bars of a panel.

    ``color`` is one matplotlib colour or a sequence of one per bar (a colour per tenant);
    ``key`` is the legend's colour (default: ``color``, or its first entry).
    """

    label: str
    values: Sequence[float]
    color: Any
    key: Any = None


@dataclass(frozen=True)
class Panel:
    """A bar chart: one group of bars per label, the series side by side or ``stacked``."""

    title: str
    labels: Sequence[str]
    series: Sequence[Series]
    stacked: bool = False
    ylim: tuple[float, float] | None = None  # None: from 0 to above the tallest bar ...
    ymax_min: float = 0.0  # ... but at least this high (fewer range changes, cheaper frames)
    hline: float | None = None  # a reference line (capacity, a_MIN), dashed
    ylabel: str = ""
    hline_label: str = ""


def tenant_colors(n: int) -> tuple[list[Any], list[Any]]:
    """(dark, light) colour per tenant, the evaluator's tab20 pairs (:mod:`edgegym.plotting`):
    retraining dark, inference light."""
    from matplotlib import colormaps

    cmap = colormaps["tab20"]
    return [cmap((2 * v) % 20) for v in range(n)], [cmap((2 * v + 1) % 20) for v in range(n)]


def render_frame(env: Any, title: str, panels: Sequence[Panel]) -> np.ndarray | None:
    """Draw ``env``'s frame with its renderer; the frame for ``"rgb_array"``, ``None`` after
    showing it for ``"human"``."""
    renderer = vars(env).get(_ATTR)
    if renderer is None:
        renderer = FrameRenderer()
        setattr(env, _ATTR, renderer)
    frame = renderer.draw(title, panels)
    if env.render_mode == "human":
        renderer.show(frame, float(env.metadata.get("render_fps") or 4))
        return None
    return frame


def release(env: Any) -> None:
    """Close ``env``'s ``"human"`` window and drop its renderer (what ``env.close()`` may
    call); the next frame makes a new one."""
    renderer = vars(env).pop(_ATTR, None)
    if renderer is not None:
        renderer.close()


class FrameRenderer:
    """One Agg figure (two axes, a title) reused frame after frame, and the ``"human"``
    window; pickled and copied without either (they are made again when needed)."""

    def __init__(self, width: int = WIDTH, height: int = HEIGHT, dpi: int = DPI) -> None:
        if width % 2 or height % 2:
            raise ValueError(f"frame size {width}x{height}: width and height must be even")
        self.width, self.height, self.dpi = int(width), int(height), int(dpi)
        self._fig: Any = None
        self._axes: list[_PanelAxes] = []
        self._title: Any = None
        self._background: Any = None  # the frame without its animated artists
        self._texts: dict[int, tuple[str, Any]] = {}  # title -> (its text, its pixels)
        self._window: Any = None  # (pyplot figure, image) of "human"
        self._finalizer: Any = None

    def __getstate__(self) -> dict[str, int]:
        return {"width": self.width, "height": self.height, "dpi": self.dpi}

    def __setstate__(self, state: dict[str, int]) -> None:
        self.__init__(**state)

    # ------------------------------------------------------------------ rgb_array
    def _figure(self) -> None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        fig = Figure(figsize=(self.width / self.dpi, self.height / self.dpi), dpi=self.dpi)
        FigureCanvasAgg(fig)
        self._axes = [_PanelAxes(ax) for ax in fig.subplots(1, 2)]
        fig.subplots_adjust(left=0.075, right=0.985, top=0.82, bottom=0.11, wspace=0.22)
        self._title = fig.text(0.5, 0.975, "", ha="center", va="top", fontsize=9, animated=True)
        self._fig = fig
        self._background = None

    def draw(self, title: str, panels: Sequence[Panel]) -> np.ndarray:
        """The (HEIGHT, WIDTH, 3) ``uint8`` frame of ``title`` over up to two ``panels``.

        Axes, ticks and legends are drawn once per layout and y range (the background);
        each frame restores it and draws only the bars, reference lines and titles.
        """
        if self._fig is None:
            self._figure()
        fig = self._fig
        canvas = fig.canvas
        self._title.set_text(title)
        panels = list(panels)[: len(self._axes)]
        panels += [None] * (len(self._axes) - len(panels))
        changed = [pa.show(p) for pa, p in zip(self._axes, panels, strict=True)]
        if self._background is None or any(changed):
            canvas.draw()  # everything but the animated artists
            self._background = canvas.copy_from_bbox(fig.bbox)
            self._texts.clear()
        else:
            canvas.restore_region(self._background)
        for pa in self._axes:
            for artist in pa.animated():
                pa.ax.draw_artist(artist)
        for text in [pa.ax.title for pa in self._axes if pa.ax.get_visible()] + [self._title]:
            self._draw_text(text)
        rgba = np.asarray(canvas.buffer_rgba())
        out = np.full((self.height, self.width, 3), 255, dtype=np.uint8)
        h, w = min(self.height, rgba.shape[0]), min(self.width, rgba.shape[1])
        out[:h, :w] = rgba[:h, :w, :3]
        return out

    def _draw_text(self, text: Any) -> None:
        """Draw a title, or paste its pixels from the last frame when it has not changed
        (text is most of a frame's cost; titles lie outside the bars)."""
        canvas = self._fig.canvas
        s = text.get_text()
        cached = self._texts.get(id(text))
        if cached is not None and cached[0] == s:
            canvas.restore_region(cached[1])
            return
        self._fig.draw_artist(text)
        box = text.get_window_extent(canvas.get_renderer()).padded(2)
        self._texts[id(text)] = (s, canvas.copy_from_bbox(box))

    # ------------------------------------------------------------------ human
    def show(self, frame: np.ndarray, fps: float) -> None:
        """Show ``frame`` in this renderer's pyplot window and wait ``1 / fps`` seconds (not on
        a non-interactive backend, where nothing can be shown)."""
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*non-(interactive|GUI).*")
            import matplotlib
            import matplotlib.pyplot as plt

            if self._window is None or not plt.fignum_exists(self._window[0].number):
                fig = plt.figure(figsize=(self.width / self.dpi, self.height / self.dpi))
                fig.add_axes((0.0, 0.0, 1.0, 1.0)).set_axis_off()
                image = plt.imshow(frame)
                self._window = (fig, image)
                self._finalizer = weakref.finalize(self, _close_window, fig)
                self._finalizer.atexit = False
            else:
                fig, image = self._window
                image.set_data(frame)
                plt.figure(fig.number)  # make it pyplot's current figure for pause()
            if matplotlib.get_backend().lower() not in _NON_INTERACTIVE:
                plt.pause(1.0 / max(fps, 1e-3))

    def close(self) -> None:
        """Close the ``"human"`` window and drop the figures."""
        if self._finalizer is not None:
            self._finalizer()
        self.__init__(self.width, self.height, self.dpi)


def _close_window(fig: Any) -> None:
    import matplotlib.pyplot as plt

    plt.close(fig)


class _PanelAxes:
    """One axes of the frame: built for a panel's layout (labels, series, colours), then only
    its bar heights, titles and y range are updated while the layout stays the same (a
    rebuild costs several times an update)."""

    def __init__(self, ax: Any) -> None:
        self.ax = ax
        self.key: Any = None
        self.bars: list[Any] = []
        self.hline: Any = None
        self.ylim: tuple[float, float] | None = None

    def show(self, p: Panel | None) -> bool:
        """Set the artists to ``p`` (hide for ``None``); whether the background changed."""
        ax = self.ax
        if p is None:
            changed = ax.get_visible()
            ax.set_visible(False)
            return changed
        changed = not ax.get_visible()
        ax.set_visible(True)
        key = _layout_key(p)
        if key != self.key:
            self._build(p)
            self.key = key
            changed = True
        n = len(p.labels)
        bottom = np.zeros(n)
        top = 0.0
        for s, bars in zip(p.series, self.bars, strict=True):
            values = _values(s, n)
            for rect, v, b in zip(bars, values, bottom, strict=True):
                rect.set_height(v)
                if p.stacked:
                    rect.set_y(b)
            top = max(top, float((bottom + values).max(initial=0.0)))
            if p.stacked:
                bottom = bottom + values
        if p.hline is not None:
            self.hline.set_ydata([p.hline, p.hline])
        ax.title.set_text(p.title)
        if p.ylim is not None:
            lo, hi = (float(v) for v in p.ylim)
        else:
            hi = max(top, p.hline or 0.0)
            lo, hi = 0.0, (_nice_ceil(hi * 1.05) if hi > 0 else 1.0)
            hi = max(hi, p.ymax_min)
        if (lo, hi) != self.ylim:
            from matplotlib.ticker import MaxNLocator

            self.ylim = (lo, hi)
            # Headroom above the data range for the legend; ticks only inside the range.
            ax.set_ylim(lo, hi + _LEGEND_ROOM * (hi - lo))
            ticks = MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]).tick_values(lo, hi)
            ax.set_yticks(ticks[(ticks >= lo - 1e-9) & (ticks <= hi + 1e-9)])
            changed = True
        return changed

    def animated(self) -> list[Any]:
        """What each frame draws over the background: bars and reference line (the title is
        animated too, drawn by :meth:`FrameRenderer._draw_text`)."""
        if not self.ax.get_visible():
            return []
        out = [rect for bars in self.bars for rect in bars]
        if self.hline is not None:
            out.append(self.hline)
        return out

    def _build(self, p: Panel) -> None:
        from matplotlib.colors import is_color_like
        from matplotlib.patches import Patch

        ax = self.ax
        ax.cla()
        self.ylim = None
        n = len(p.labels)
        x = np.arange(n)
        k = max(len(p.series), 1)
        width = 0.8 if p.stacked else 0.8 / k
        handles = []
        self.bars = []
        for j, s in enumerate(p.series):
            offset = 0.0 if p.stacked else (j - (k - 1) / 2) * width
            bars = ax.bar(x + offset, np.zeros(n), width, color=s.color, linewidth=0)
            for rect in bars:
                rect.set_animated(True)
            self.bars.append(bars)
            key = s.key if s.key is not None else s.color
            if not is_color_like(key):
                key = key[0] if len(key) else "0.5"
            if len(p.series) > 1:
                handles.append(Patch(color=key, label=s.label))
        self.hline = None
        if p.hline is not None:
            self.hline = ax.axhline(
                p.hline, color="k", linestyle="--", linewidth=0.9, animated=True
            )
            if p.hline_label:
                handles.append(
                    Patch(facecolor="none", edgecolor="k", linestyle="--", label=p.hline_label)
                )
        ax.set_xlim(-0.6, n - 0.4 if n else 0.6)
        step = max(1, -(-n // _MAX_TICK_LABELS))
        ax.set_xticks(x[::step])
        long = any(len(str(label)) > 6 for label in p.labels) and n > 3
        ax.set_xticklabels(
            [str(label) for label in p.labels][::step],
            fontsize=7,
            rotation=25 if long else 0,
            ha="right" if long else "center",
        )
        ax.tick_params(axis="y", labelsize=7)
        ax.set_title(p.title, fontsize=8)
        ax.title.set_animated(True)
        if p.ylabel:
            ax.set_ylabel(p.ylabel, fontsize=7)
        if handles:
            ax.legend(
                handles=handles,
                fontsize=6,
                loc="upper right",
                ncol=min(len(handles), 3),
                framealpha=0.8,
                handlelength=1.2,
                columnspacing=0.8,
            )


def _layout_key(p: Panel) -> tuple[Any, ...]:
    """What fixes the artists of a panel (everything but values, titles and the y range)."""
    series = tuple((s.label, repr(s.color), repr(s.key)) for s in p.series)
    return (tuple(map(str, p.labels)), series, p.stacked, p.hline is None, p.hline_label, p.ylabel)


def _values(s: Series, n: int) -> np.ndarray:
    values = np.nan_to_num(np.asarray(s.values, dtype=float).reshape(-1), posinf=0.0, neginf=0.0)
    if values.size != n:
        raise ValueError(f"series {s.label!r}: {values.size} values for {n} labels")
    return values


def _nice_ceil(x: float) -> float:
    """The smallest of 1, 2, 2.5, 5 x 10^k at least ``x`` (so the auto y range moves in steps)."""
    e = 10.0 ** np.floor(np.log10(x))
    for m in (1.0, 2.0, 2.5, 5.0, 10.0):
        if m * e >= x * (1 - 1e-12):
            return float(m * e)
    return float(10 * e)
