"""taot: topology-aware expert replication for MoE training (libtaot_client).

The low-level client (transports, Client, plans, reroute, weight and gradient moves) comes from
the extension `taot._taot`, re-exported here. `taot.torch` builds a PyTorch expert-parallel layer
on it (docs/integration.md); it imports torch, so it is not imported here.
"""
from taot._taot import *  # noqa: F401,F403 (the extension's names are the package's API)
