#!/usr/bin/env bash
# Run CMD in throw-away network, PID and mount namespaces:
#  - only `lo` exists inside, so nothing the lab or a test starts can reach another machine; it gets a
#    second address, 127.0.0.2: Slurm's daemons and srun bind through getaddrinfo(AF_INET, AI_ADDRCONFIG),
#    glibc counts 127.0.0.1 as no IPv4 address at all, and they fail ("Unable to resolve (null)"). With
#    that address Open MPI's mpirun finds "No network interfaces ... for out-of-band communications"
#    (it drops loopback once lo has a second address), so its out-of-band channel is pointed at lo;
#  - /dev/shm is a private tmpfs, so lab run dirs vanish with the namespace;
#  - every process started inside is killed by the kernel when the wrapper ends, even on SIGKILL.
# bash stays PID 1 (it does not exec CMD) because it reaps orphans, e.g. a daemonised lab supervisor.
set -euo pipefail

if [[ $# -eq 0 ]]; then
    echo "usage: $0 CMD [ARG...]" >&2
    exit 2
fi
if [[ $(id -u) -ne 0 ]]; then
    echo "$0: needs root (namespaces, mounts, tc)" >&2
    exit 2
fi

exec unshare --net --pid --mount --fork --kill-child --mount-proc -- bash -c '
    set -e
    ip link set lo up
    ip addr add 127.0.0.2/32 dev lo
    export OMPI_MCA_oob_tcp_if_include=lo
    mount -t tmpfs -o mode=1777 fabcheck-ci-shm /dev/shm
    set +e
    "$@"
    rc=$?
    exit "$rc"
' fabcheck-lab-wrapper "$@"
