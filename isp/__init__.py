"""Software camera pipeline (``hetbench.isp``): RAW captures, ISP stages, unprocessing."""
