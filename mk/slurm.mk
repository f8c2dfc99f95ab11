# Slurm for the Slurm executor's tests (docs/fleet.md): Debian's slurm-wlm
# (slurmctld, slurmd and the client commands) and munge. The tests start
# their own two-node cluster in a temp dir (host/tests/all/slurm_cluster.rs);
# nothing here configures or starts a system-wide Slurm.

SLURM_PROGRAMS := slurmctld slurmd sbatch squeue sinfo scontrol scancel srun munged
# Root on CI and the dev machines; sudo elsewhere.
SLURM_SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: deps-slurm

## deps-slurm: slurm-wlm and munge from apt, only when a program is missing.
deps-slurm:
	@missing=""; for p in $(SLURM_PROGRAMS); do command -v $$p >/dev/null || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "deps-slurm: installing slurm-wlm and munge (missing:$$missing)"; \
		$(SLURM_SUDO) apt-get -o DPkg::Lock::Timeout=600 update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SLURM_SUDO) apt-get -o DPkg::Lock::Timeout=600 install -y -qq slurm-wlm munge; \
	fi
