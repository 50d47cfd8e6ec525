"""ISP stages (HeteroSwitch Table 3): importing this package registers every variant.

``REGISTRY[stage][name]`` is a :class:`~hetbench.isp.stages.base.StageVariant`; stages run in
:data:`STAGES` order. See :mod:`hetbench.isp.stages.base` for the image state between stages.
"""

from hetbench.isp.stages.base import REGISTRY, STAGES, StageContext, StageVariant, register
from hetbench.isp.stages import compress, demosaic, denoise, gamut, tone, white_balance  # noqa: F401  (registers)

__all__ = ["REGISTRY", "STAGES", "StageContext", "StageVariant", "register"]
