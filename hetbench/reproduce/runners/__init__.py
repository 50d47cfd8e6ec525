"""Claim runners by the name a claim's ``runner:`` gives (one module each)."""

from __future__ import annotations

from hetbench.registry import Registry
from hetbench.reproduce.runners.ablation import AblationRunner
from hetbench.reproduce.runners.base import Axes, Context, Runner, RunOutput
from hetbench.reproduce.runners.cross_device import CrossDeviceRunner
from hetbench.reproduce.runners.defaults_learn import DefaultsLearnRunner
from hetbench.reproduce.runners.device_fairness import DeviceFairnessRunner
from hetbench.reproduce.runners.device_generalisation import LeaveOneDeviceOutRunner
from hetbench.reproduce.runners.domains import DomainsRunner
from hetbench.reproduce.runners.embedding_zeta import EmbeddingZetaRunner
from hetbench.reproduce.runners.footprint import FootprintRunner
from hetbench.reproduce.runners.geo import GeoClientsRunner
from hetbench.reproduce.runners.isp_stage_drop import IspStageDropRunner
from hetbench.reproduce.runners.label_skew import LabelSkewRunner
from hetbench.reproduce.runners.server_momentum import ServerMomentumRunner
from hetbench.reproduce.runners.step_sensitivity import StepSensitivityRunner
from hetbench.reproduce.runners.task_view import TaskViewRunner
from hetbench.reproduce.runners.tuned_pair import TunedPairRunner
from hetbench.reproduce.runners.virtual_clients import VirtualClientsRunner

RUNNERS: Registry[Runner] = Registry(
    "claim runner",
    {
        "cross_device": CrossDeviceRunner(),
        "dapperfl_ablation": AblationRunner(),
        "dapperfl_domains": DomainsRunner(),
        "dapperfl_footprint": FootprintRunner(),
        "defaults_learn": DefaultsLearnRunner(),
        "device_fairness": DeviceFairnessRunner(),
        "embedding_zeta": EmbeddingZetaRunner(),
        "geo_clients": GeoClientsRunner(),
        "isp_stage_drop": IspStageDropRunner(),
        "label_skew": LabelSkewRunner(),
        "leave_one_device_out": LeaveOneDeviceOutRunner(),
        "server_momentum": ServerMomentumRunner(),
        "step_sensitivity": StepSensitivityRunner(),
        "task_view": TaskViewRunner(),
        "tuned_pair": TunedPairRunner(),
        "virtual_clients": VirtualClientsRunner(),
    },
)
"""Every runner a claim definition may name."""

__all__ = ["RUNNERS", "Axes", "Context", "Runner", "RunOutput"]
