"""Stand-ins the real-backend tests share."""

from __future__ import annotations

from edgegym.real.energy import Measurement


class FixedMeter:
    """NVML as a meter that reads 2 J per 0.01 s window (200 W)."""

    available, message = True, ""

    def begin(self, name):
        pass

    def end(self, name):
        return Measurement(name, 0.01, 2.0, "counter")
