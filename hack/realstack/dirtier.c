/*
 * dirtier: dirties guest memory at a chosen rate, for the real-stack tests.
 *
 * It allocates a working set of SIZE MiB, fills it with pseudo-random data
 * and then, in 10 ms slices, rewrites one random 64-bit word in each of the
 * next RATE/100 MiB worth of 4 KiB pages, walking the working set round-robin.
 * One changed word dirties the whole page both for migration's dirty bitmap
 * and for QEMU's page sampling (which hashes page contents, so the data must
 * change: writing zeros over zeros would not count).
 *
 * So the guest dirties RATE MiB/s of distinct pages as long as RATE x period
 * stays below SIZE; a measurement period longer than SIZE/RATE sees at most
 * SIZE/period. Slices the vCPU missed (throttled or descheduled for more
 * than a slice) are dropped, not made up: the rate falls with the CPU time
 * the vCPU gets, as a CPU-bound workload's would.
 *
 * Usage: dirtier [RATE_MIB_S [SIZE_MIB]]
 * Without arguments it reads dirty_mb_s= and dirty_mb= from /proc/cmdline
 * (defaults 0 and 48) and exits at once when the rate is 0.
 * Built static (gcc -static) so the guest needs no libc.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096UL
#define MIB (1024UL * 1024UL)
#define SLICE_NS 10000000L /* 10 ms */

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;

/* xorshift64*: cheap enough for TCG, and never produces a run of zeros. */
static uint64_t next_random(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1DULL;
}

static long cmdline_param(const char *name, long def)
{
	char buf[4096];
	FILE *f = fopen("/proc/cmdline", "r");
	if (f == NULL)
		return def;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	size_t len = strlen(name);
	for (char *tok = strtok(buf, " \n"); tok != NULL; tok = strtok(NULL, " \n")) {
		if (strncmp(tok, name, len) == 0 && tok[len] == '=')
			return strtol(tok + len + 1, NULL, 10);
	}
	return def;
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long rate = argc > 1 ? strtol(argv[1], NULL, 10) : cmdline_param("dirty_mb_s", 0);
	long size = argc > 2 ? strtol(argv[2], NULL, 10) : cmdline_param("dirty_mb", 48);
	if (rate <= 0) {
		fprintf(stderr, "dirtier: rate 0, nothing to do\n");
		return 0;
	}
	if (size <= 0) {
		fprintf(stderr, "dirtier: size must be > 0 MiB\n");
		return 2;
	}

	size_t bytes = (size_t)size * MIB;
	size_t pages = bytes / PAGE;
	unsigned char *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		fprintf(stderr, "dirtier: mmap %ld MiB: %s\n", size, strerror(errno));
		return 1;
	}
	rng_state ^= (uint64_t)now_ns();
	for (size_t i = 0; i < bytes; i += sizeof(uint64_t))
		*(uint64_t *)(mem + i) = next_random();

	fprintf(stderr, "dirtier: dirtying %ld MiB/s over %ld MiB\n", rate, size);

	/* Pages per slice as a fraction, so low rates still spread evenly. */
	double per_slice = (double)rate * MIB / PAGE * SLICE_NS / 1e9;
	double owed = 0;
	size_t page = 0;
	int64_t next = now_ns();
	for (;;) {
		owed += per_slice;
		while (owed >= 1) {
			size_t word = (next_random() % (PAGE / sizeof(uint64_t))) * sizeof(uint64_t);
			*(volatile uint64_t *)(mem + page * PAGE + word) = next_random();
			page = (page + 1) % pages;
			owed -= 1;
		}
		next += SLICE_NS;
		int64_t wait = next - now_ns();
		if (wait > 0) {
			struct timespec ts = {wait / 1000000000LL, wait % 1000000000LL};
			nanosleep(&ts, NULL);
		} else if (wait < -SLICE_NS) {
			/* More than a slice behind: the vCPU did not run (QEMU's
			 * migration throttle, a paused guest, a loaded host) or
			 * the writes took longer than the slice. Drop the missed
			 * slices instead of catching up in a burst, as a CPU-bound
			 * workload would: its progress follows the CPU time it
			 * gets, so a vCPU throttled to 10 % of the time dirties
			 * about a tenth of the pages. */
			next = now_ns();
		}
	}
}
