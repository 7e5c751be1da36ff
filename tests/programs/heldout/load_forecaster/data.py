"""Synthetic hourly electricity-load data: a few months of a city's demand with the weather that drives it."""

import numpy as np

FEATURES = ["load", "temperature", "irradiance", "hour_sin", "hour_cos"]
TARGET = 0  # column of the value to forecast


def make_load_series(n_hours=3000, seed=0):
    """Returns an array [n_hours, 5]: load (MW), temperature (C), solar irradiance (W/m2, 0 at night), hour encoding.

    Load = slow growth + daily and weekly cycles + air-conditioning when it is hot - rooftop solar + noise.
    """
    rng = np.random.default_rng(seed)
    t = np.arange(n_hours, dtype=np.float64)
    hour = t % 24
    day = t // 24

    temperature = 18 + 6 * np.sin(2 * np.pi * (hour - 9) / 24) + 4 * np.sin(2 * np.pi * day / 60)
    temperature += rng.normal(0, 1.0, n_hours).cumsum() * 0.05 + rng.normal(0, 0.5, n_hours)

    clouds = np.clip(0.7 + 0.3 * rng.standard_normal(n_hours // 24 + 1), 0.1, 1.0)[day.astype(int)]
    irradiance = np.maximum(0.0, np.sin(2 * np.pi * (hour - 6) / 24)) * 800 * clouds
    irradiance = np.round(irradiance, 1)  # the sensor reports 0.0 all night

    weekend = ((day % 7) >= 5).astype(np.float64)
    load = (
        500
        + 0.02 * t
        + 80 * np.sin(2 * np.pi * (hour - 14) / 24)
        + 30 * np.sin(2 * np.pi * (hour - 8) / 12)
        - 60 * weekend
        + 6 * np.maximum(temperature - 20, 0) ** 1.5
        - 0.05 * irradiance
        + rng.normal(0, 8, n_hours)
    )

    hour_sin, hour_cos = np.sin(2 * np.pi * hour / 24), np.cos(2 * np.pi * hour / 24)
    return np.stack([load, temperature, irradiance, hour_sin, hour_cos], axis=1).astype(np.float32)
