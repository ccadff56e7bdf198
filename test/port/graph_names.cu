// graph_names.cu - names of stream capture and graphs, for the rules of gpuport-port
// (test/port/check.sh checks the converted text; this file is not built).
#include <cstdio>
#include <cuda_runtime.h>

void graphNames(cudaStream_t s, cudaGraph_t g) {
  cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed);
  cudaStreamCaptureStatus st;
  cudaStreamIsCapturing(s, &st);
  if (st == cudaStreamCaptureStatusActive) return;
  size_t n = 0;
  cudaGraphGetNodes(g, NULL, &n);
  cudaGraphNodeType t = cudaGraphNodeTypeMemset;
  cudaGraphExecUpdateResult r = cudaGraphExecUpdateErrorTopologyChanged;
  printf("%d %d\n", (int)t, (int)r);
}
