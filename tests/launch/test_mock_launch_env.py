"""The lab's mock nccl-tests take their place in the job from the launcher's environment, as the real
binaries do: Open MPI's OMPI_COMM_WORLD_*, Slurm's SLURM_*; all ranks of one job derive one meeting port."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from fabcheck_lab.mockhost.tools import nccl_tests

NODE = SimpleNamespace(hostname="gpu02", address="127.0.1.2", info={"peers": {"gpu01": "127.0.1.1"}})


def test_open_mpi_ranks_meet_at_the_port_of_their_pmix_namespace() -> None:
    env = {
        "OMPI_COMM_WORLD_RANK": "9",
        "OMPI_COMM_WORLD_SIZE": "16",
        "OMPI_COMM_WORLD_LOCAL_RANK": "1",
        "OMPI_COMM_WORLD_LOCAL_SIZE": "8",
        "PMIX_NAMESPACE": "1486618625",
        "PMIX_RANK": "9",
    }
    world = nccl_tests.world_from_env(env, NODE)  # type: ignore[arg-type]
    assert (world.proc, world.nprocs, world.local, world.nlocal, world.root) == (9, 16, 1, 8, None)
    other = nccl_tests.world_from_env({**env, "OMPI_COMM_WORLD_RANK": "0"}, NODE)  # type: ignore[arg-type]
    assert world.port == other.port and nccl_tests.PORT_RANGE[0] <= world.port < nccl_tests.PORT_RANGE[1]
    next_job = nccl_tests.world_from_env({**env, "PMIX_NAMESPACE": "1486618626"}, NODE)  # type: ignore[arg-type]
    assert next_job.port != world.port


@pytest.mark.parametrize(
    ("nodelist", "root"),
    [
        ("gpu[01-02]", "127.0.1.1"),
        ("gpu01,gpu02", "127.0.1.1"),
        ("gpu[02,05]", "127.0.1.2"),
        ("gpu02", "127.0.1.2"),
    ],
)
def test_slurm_tasks_find_rank_0_on_the_first_node_of_the_step(nodelist: str, root: str) -> None:
    env = {
        "SLURM_PROCID": "3",
        "SLURM_NTASKS": "4",
        "SLURM_LOCALID": "1",
        "SLURM_JOB_ID": "7",
        "SLURM_STEP_ID": "0",
        "SLURM_STEP_NODELIST": nodelist,
    }
    world = nccl_tests.world_from_env(env, NODE)  # type: ignore[arg-type]
    assert (world.proc, world.nprocs, world.local, world.root) == (3, 4, 1, root)


def test_fabcheck_mpirun_still_names_the_meeting_point() -> None:
    env = {"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2", "FABCHECK_MPI_ROOT": "127.0.1.1"}
    world = nccl_tests.world_from_env({**env, "FABCHECK_MPI_PORT": "23456"}, NODE)  # type: ignore[arg-type]
    assert (world.root, world.port) == ("127.0.1.1", 23456)
