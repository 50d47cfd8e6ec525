"""Reference federated trainer: score FL algorithms on any hetbench split.

A split is read only through the published contract (DESIGN.md sections 3 and 5): ``datasets.load_dataset``
on a built folder, clients by ``client_id``, groups by ``device`` / ``domain`` / ``s2_cell`` / ``user_id``.
Every client runs in this one process; the data are decoded once into tensors and clients are index arrays
into them, so memory grows with the data, not with the number of clients.
"""
