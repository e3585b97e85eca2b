"""Synthetic Bragg peaks: detector patches around one diffraction spot, from a physical model.

A Bragg peak on an area detector is well described by a 2-D pseudo-Voigt profile: a mix
``eta * Lorentzian + (1 - eta) * Gaussian`` that share one centre. The Gaussian gives the sharp
core (instrument resolution, grain size), the Lorentzian the long tails (strain, mosaicity).
Each patch here is

    expected counts  = amplitude * pseudo_voigt(x, y) + background (a constant plus a tilt)
                       [+ a weaker neighbouring peak near the edge, in ``neighbour_fraction`` of patches]
    measured counts  = Poisson(expected) + Gaussian read-out noise
    patch            = (counts - min) / (max - min)           # BraggNN's per-patch normalisation

with the centre, widths, tilt of the ellipse, ``eta``, amplitude and background drawn at random
from a seeded generator. The label is the true centre ``(x, y)`` (column, row) divided by
``size - 1``, so it lies in [0, 1], as BraggNN's training labels do (Liu et al., IUCrJ 2022).
"""

from __future__ import annotations

import math

import torch

from accelkit.data.samples import Samples


def pseudo_voigt(x: torch.Tensor, y: torch.Tensor, x0: torch.Tensor | float, y0: torch.Tensor | float, *,
                 sigma_x: torch.Tensor | float, sigma_y: torch.Tensor | float,
                 gamma_x: torch.Tensor | float, gamma_y: torch.Tensor | float,
                 eta: torch.Tensor | float, theta: torch.Tensor | float = 0.0) -> torch.Tensor:
    """A 2-D pseudo-Voigt profile with peak value 1 at ``(x0, y0)``; all arguments broadcast.

    ``sigma_*`` are the Gaussian's standard deviations and ``gamma_*`` the Lorentzian's half
    widths at half maximum, along the ellipse's axes, which are turned by ``theta`` radians.
    Both parts fall monotonically along every ray from the centre, so the maximum is the centre.
    """
    theta_t = torch.as_tensor(theta, dtype=x.dtype)
    dx, dy = x - x0, y - y0
    u = dx * torch.cos(theta_t) + dy * torch.sin(theta_t)  # along the ellipse's first axis
    v = -dx * torch.sin(theta_t) + dy * torch.cos(theta_t)
    gauss = torch.exp(-0.5 * ((u / sigma_x) ** 2 + (v / sigma_y) ** 2))
    lorentz = 1.0 / (1.0 + (u / gamma_x) ** 2 + (v / gamma_y) ** 2)
    return eta * lorentz + (1.0 - eta) * gauss


def bragg_peaks(n: int = 4096, seed: int = 0, *, size: int = 11, centre_range_px: float = 2.0,
                read_noise: float = 2.0, neighbour_fraction: float = 0.3) -> Samples:
    """``n`` patches: ``x`` (n, 1, size, size) float32 in [0, 1], ``y`` (n, 2) float32 centres in [0, 1].

    The true centre lies within ``centre_range_px`` pixels of the patch's middle pixel (pixel
    ``i`` has its centre at coordinate ``i``). ``extras`` keeps, per patch, the centre in pixels
    (``centre_px``), ``sigma``, ``gamma``, ``eta``, ``theta``, ``amplitude``, ``background`` and
    the raw ``counts``, for physics checks and for the fitting baselines a notebook may compare.
    """
    g = torch.Generator().manual_seed(seed)

    def uniform(lo: float, hi: float, *shape: int) -> torch.Tensor:
        return lo + (hi - lo) * torch.rand(*(shape or (n,)), generator=g, dtype=torch.float64)

    mid = (size - 1) / 2
    centre = mid + uniform(-centre_range_px, centre_range_px, n, 2)  # (n, 2) as (x, y)
    sigma = uniform(0.6, 1.6, n, 2)  # Gaussian std along the two axes, px
    gamma = uniform(0.6, 1.6, n, 2)  # Lorentzian HWHM along the two axes, px
    eta = uniform(0.0, 1.0)
    theta = uniform(0.0, math.pi)
    amplitude = torch.exp(uniform(math.log(50.0), math.log(2000.0)))  # photons at the peak
    level = uniform(0.0, 40.0)  # flat background, photons per pixel
    tilt = uniform(-1.0, 1.0, n, 2)  # background slope, photons per pixel per pixel
    # A weaker neighbouring spot at the patch's edge in some patches (a crowded detector frame):
    # it drags a plain centroid off the true centre, which a trained model learns to ignore.
    has_neighbour = torch.rand(n, generator=g) < neighbour_fraction
    angle = uniform(0.0, 2 * math.pi)
    distance = uniform(4.5, 7.0)
    neighbour = centre + distance[:, None] * torch.stack([torch.cos(angle), torch.sin(angle)], dim=1)
    neighbour_amplitude = amplitude * uniform(0.1, 0.6) * has_neighbour

    coords = torch.arange(size, dtype=torch.float64)
    yy, xx = torch.meshgrid(coords, coords, indexing="ij")  # (size, size): row = y, column = x

    def per_patch(t: torch.Tensor) -> torch.Tensor:  # (n,) -> (n, 1, 1) to broadcast over the grid
        return t[:, None, None]

    profile = pseudo_voigt(xx, yy, per_patch(centre[:, 0]), per_patch(centre[:, 1]),
                           sigma_x=per_patch(sigma[:, 0]), sigma_y=per_patch(sigma[:, 1]),
                           gamma_x=per_patch(gamma[:, 0]), gamma_y=per_patch(gamma[:, 1]),
                           eta=per_patch(eta), theta=per_patch(theta))  # (n, size, size)
    profile2 = pseudo_voigt(xx, yy, per_patch(neighbour[:, 0]), per_patch(neighbour[:, 1]),
                            sigma_x=per_patch(sigma[:, 1]), sigma_y=per_patch(sigma[:, 0]),
                            gamma_x=per_patch(gamma[:, 1]), gamma_y=per_patch(gamma[:, 0]),
                            eta=per_patch(eta), theta=per_patch(theta))
    background = (per_patch(level) + per_patch(tilt[:, 0]) * (xx - mid)
                  + per_patch(tilt[:, 1]) * (yy - mid)).clamp_min(0.0)
    expected = per_patch(amplitude) * profile + per_patch(neighbour_amplitude) * profile2 + background
    counts = torch.poisson(expected, generator=g) + read_noise * torch.randn(expected.shape, generator=g,
                                                                             dtype=torch.float64)
    lo = counts.amin(dim=(1, 2), keepdim=True)
    hi = counts.amax(dim=(1, 2), keepdim=True)
    patches = ((counts - lo) / (hi - lo).clamp_min(1e-9)).float()[:, None]
    return Samples(
        "bragg_peaks",
        {"x": patches, "y": (centre / (size - 1)).float()},
        extras={"centre_px": centre, "sigma": sigma, "gamma": gamma, "eta": eta, "theta": theta,
                "amplitude": amplitude, "background": level, "neighbour_px": neighbour,
                "neighbour_amplitude": neighbour_amplitude, "counts": counts.float()},
        info={"seed": seed, "size": size, "centre_range_px": centre_range_px, "read_noise": read_noise,
              "neighbour_fraction": neighbour_fraction,
              "model": "pseudo-Voigt peak (+ a weaker neighbour) + tilted background, "
                       "Poisson counts + Gaussian read noise"},
    )
