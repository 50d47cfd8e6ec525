"""The commands that use a built folder: the top room of the core, above :mod:`hetbench.publish`.

They read a folder through :mod:`hetbench.contract` and use the whole pipeline below (sources,
partitioners, splits, report, publish) to check or refresh it:

* :mod:`~hetbench.tools.verify` - ``hetbench verify``: the recipe re-run on the source and compared with the
  folder (:func:`~hetbench.tools.verify.verify_folder`; the facade's :func:`hetbench.verify`);
* :mod:`~hetbench.tools.folder_checks` - what ``verify`` checks from the folder alone (manifest, shards,
  digests, sample ids);
* :mod:`~hetbench.tools.report_refresh` - ``hetbench report``: the report recomputed from the shards
  (:func:`~hetbench.tools.report_refresh.refresh_report`);
* :mod:`~hetbench.tools.card_refresh` - the card's statistics sections re-rendered after it;
* :mod:`~hetbench.tools.clusterings` - ``hetbench compare-clusterings``: zeta of two embedding clusterings.

Nothing below this room imports it (``tests/test_architecture.py``). Importing the package imports none of
its modules.
"""
