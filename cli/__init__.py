"""hetbench's command line (``hetbench.cli``): thin click commands over the library."""
