"""ISP stages (HeteroSwitch Table 3, and the chroma noise reduction and sharpening a phone adds),
gathered in one explicit registry.

``REGISTRY`` is a :class:`~hetbench.registry.Registry` of stages whose values are the stages'
own registries of :class:`~hetbench.isp.stages.base.StageVariant`: ``REGISTRY["wb"]["gray-world"]``.
Each stage module lists its variants in ``VARIANTS``; nothing is filled by import side effects.
Stages run in :data:`STAGES` order; see :mod:`hetbench.isp.stages.base` for the image state
between stages.

Examples
--------
>>> from hetbench.isp.stages import REGISTRY
>>> REGISTRY["wb"].names()
('grey-edge', 'gray-world', 'none', 'white-patch', 'camera')
>>> REGISTRY["tone"]["sepia"]
Traceback (most recent call last):
...
hetbench.registry.UnknownNameError: unknown tone option 'sepia'; choose one of: srgb-gamma, none, srgb-gamma+equalize
"""

from hetbench.isp.stages import chroma, compress, demosaic, denoise, gamut, sharpen, tone, white_balance
from hetbench.isp.stages.base import STAGES, TABLE3_STAGES, StageContext, StageVariant
from hetbench.registry import Registry

REGISTRY: Registry[Registry[StageVariant]] = Registry(
    "ISP stage",
    {
        "demosaic": demosaic.VARIANTS,
        "denoise": denoise.VARIANTS,
        "wb": white_balance.VARIANTS,
        "gamut": gamut.VARIANTS,
        "tone": tone.VARIANTS,
        "chroma": chroma.VARIANTS,
        "sharpen": sharpen.VARIANTS,
        "compress": compress.VARIANTS,
    },
)
assert REGISTRY.names() == STAGES

__all__ = ["REGISTRY", "STAGES", "TABLE3_STAGES", "StageContext", "StageVariant"]
