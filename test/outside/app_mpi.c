/* app_mpi.c - an outside program built with `pkg-config gpuport-mpi gpuport-cpu`: a
 * communicator from MPI_COMM_WORLD, one all-reduce (run as a singleton, one rank). */
#include <stdio.h>
#include <mpi.h>
#include <gpuport.h>
#include <gpuport/mpi.h>

static int run(void) {
  gp_comm_t comm;
  float *x;
  int size = 0;
  GP_CHECK(gp_comm_init_mpi(&comm, MPI_COMM_WORLD));
  GP_CHECK(gp_comm_size(comm, &size));
  GP_CHECK(gp_malloc((void **)&x, sizeof *x));
  *x = 1.5f;
  GP_CHECK(gp_all_reduce(x, x, 1, GP_F32, GP_SUM, comm, NULL));
  GP_CHECK(gp_stream_synchronize(NULL));
  int ok = *x == 1.5f * (float)size;
  printf("app_mpi: %d rank(s), all-reduce %s\n", size, ok ? "ok" : "WRONG");
  GP_CHECK(gp_free(x));
  GP_CHECK(gp_comm_destroy(comm));
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rc = run();
  MPI_Finalize();
  return rc;
}
