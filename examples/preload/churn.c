/*
 * churn — an ordinary multi-threaded program that knows nothing about NUMA or libnumapage.
 *
 * Four threads each build and tear down linked lists with malloc and free, as servers and
 * interpreters do all day. Nothing here includes numapage.h: the point of the preload example is
 * that an unmodified program gets node-local memory, and per-node statistics, when it runs with
 * libnumapage preloaded (see run.sh).
 *
 * It prints how many bytes it asked malloc for, so you can compare with the malloc_requested
 * row of the table that libnumapage prints.
 *
 * Build: cc churn.c -pthread -o churn          (no libnumapage needed)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define ROUNDS 20
#define NODES_PER_LIST 2000

struct item {
	struct item *next;
	char payload[120]; /* 128-byte items, a typical small object */
};

static void *churn(void *arg)
{
	unsigned long *bytes = arg;
	for (int r = 0; r < ROUNDS; r++) {
		struct item *head = NULL;
		for (int i = 0; i < NODES_PER_LIST; i++) {
			struct item *it = malloc(sizeof *it);
			if (!it) {
				perror("malloc");
				exit(1);
			}
			*bytes += sizeof *it;
			it->payload[0] = (char)i;
			it->next = head;
			head = it;
		}
		while (head) {
			struct item *next = head->next;
			free(head);
			head = next;
		}
	}
	return NULL;
}

int main(void)
{
	pthread_t t[THREADS];
	unsigned long bytes[THREADS] = {0}, total = 0;
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, churn, &bytes[i]) != 0) {
			fprintf(stderr, "churn: cannot create a thread\n");
			return 1;
		}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		total += bytes[i];
	}
	printf("churn: %d threads asked malloc for %lu bytes in all\n", THREADS, total);
	return 0;
}
