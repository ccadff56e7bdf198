/*
 * info.c - `gpuport info [--json]`: backend, version and each device's properties,
 * in the spirit of nvidia-smi -q / rocminfo.
 */
#include "tool.h"

#include <string.h>

static void print_text(int dev, const gp_device_props_t *p, size_t free_b, size_t total_b,
                       int prio_least, int prio_greatest) {
  (void)total_b; /* gp_device_props_t's total is printed; --json has both */
  char tot[32], fr[32], sh[32], sho[32], l2[32];
  tool_fmt_bytes(tot, sizeof tot, (double)p->total_memory);
  tool_fmt_bytes(fr, sizeof fr, (double)free_b);
  tool_fmt_bytes(sh, sizeof sh, (double)p->shared_memory_per_block);
  tool_fmt_bytes(sho, sizeof sho, (double)p->shared_memory_per_block_optin);
  tool_fmt_bytes(l2, sizeof l2, (double)p->l2_cache_size);
  printf("device %d: %s\n", dev, p->name);
  printf("  %-24s %s\n", "arch", p->arch);
  if (p->compute_capability_major || p->compute_capability_minor)
    printf("  %-24s %d.%d\n", "compute capability", p->compute_capability_major,
           p->compute_capability_minor);
  printf("  %-24s %s total, %s free\n", "memory", tot, fr);
  printf("  %-24s %d\n", "multiprocessors", p->multiprocessor_count);
  printf("  %-24s %d\n", "warp size", p->warp_size);
  printf("  %-24s %d\n", "max threads per block", p->max_threads_per_block);
  printf("  %-24s %d x %d x %d\n", "max block dims", p->max_block_dim[0], p->max_block_dim[1],
         p->max_block_dim[2]);
  printf("  %-24s %d x %d x %d\n", "max grid dims", p->max_grid_dim[0], p->max_grid_dim[1],
         p->max_grid_dim[2]);
  printf("  %-24s %s (opt-in %s)\n", "shared memory per block", sh, sho);
  printf("  %-24s %s\n", "L2 cache", l2);
  if (p->clock_rate_khz > 0)
    printf("  %-24s %.0f MHz\n", "clock", p->clock_rate_khz / 1000.0);
  else
    printf("  %-24s unknown\n", "clock");
  if (p->pci_bus_id >= 0) printf("  %-24s %02x\n", "PCI bus", p->pci_bus_id);
  printf("  %-24s %d (least) .. %d (greatest)\n", "stream priorities", prio_least, prio_greatest);
}

static void print_json(int dev, const gp_device_props_t *p, size_t free_b, size_t total_b,
                       int prio_least, int prio_greatest) {
  printf("%s\n    {\"index\": %d, \"name\": ", dev ? "," : "", dev);
  tool_json_str(p->name);
  printf(", \"arch\": ");
  tool_json_str(p->arch);
  printf(", \"compute_capability\": \"%d.%d\", \"total_memory\": %zu, \"free_memory\": %zu, "
         "\"mem_info_total\": %zu, \"multiprocessor_count\": %d, \"warp_size\": %d, "
         "\"max_threads_per_block\": %d, \"max_block_dim\": [%d, %d, %d], "
         "\"max_grid_dim\": [%d, %d, %d], \"shared_memory_per_block\": %zu, "
         "\"shared_memory_per_block_optin\": %zu, \"l2_cache_size\": %zu, "
         "\"clock_rate_khz\": %d, \"pci_bus_id\": %d, \"stream_priority_range\": [%d, %d]}",
         p->compute_capability_major, p->compute_capability_minor, p->total_memory, free_b,
         total_b, p->multiprocessor_count, p->warp_size, p->max_threads_per_block,
         p->max_block_dim[0], p->max_block_dim[1], p->max_block_dim[2], p->max_grid_dim[0],
         p->max_grid_dim[1], p->max_grid_dim[2], p->shared_memory_per_block,
         p->shared_memory_per_block_optin, p->l2_cache_size, p->clock_rate_khz, p->pci_bus_id,
         prio_least, prio_greatest);
}

int tool_info(int argc, char **argv) {
  bool json = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json"))
      json = true;
    else
      return tool_bad_arg("info", argv[i]);
  }
  int rc = 0, major = 0, minor = 0, patch = 0, count = 0, cur = 0;
  TOOL_TRY(gp_version(&major, &minor, &patch));
  gp_status_t s = gp_device_count(&count);
  if (s == GP_ERROR_NO_DEVICE) {
    count = 0; /* reported below, not an error of the program */
  } else if (s != GP_SUCCESS) {
    TOOL_TRY(s);
  }
  if (json)
    printf("{\n  \"gpuport_version\": \"%d.%d.%d\", \"backend\": \"%s\", \"device_count\": %d,"
           "\n  \"devices\": [",
           major, minor, patch, gp_backend_name(), count);
  else
    printf("gpuport %d.%d.%d, backend %s, %d device%s\n", major, minor, patch, gp_backend_name(),
           count, count == 1 ? "" : "s");
  if (count > 0) TOOL_TRY(gp_device_get(&cur));
  for (int dev = 0; dev < count; dev++) {
    gp_device_props_t p;
    gp_device_props_init(&p);
    size_t free_b = 0, total_b = 0;
    int least = 0, greatest = 0;
    TOOL_TRY(gp_device_get_props(&p, dev));
    TOOL_TRY(gp_device_set(dev));
    TOOL_TRY(gp_mem_get_info(&free_b, &total_b));
    TOOL_TRY(gp_device_stream_priority_range(&least, &greatest));
    if (json)
      print_json(dev, &p, free_b, total_b, least, greatest);
    else
      print_text(dev, &p, free_b, total_b, least, greatest);
  }
  if (count > 0) TOOL_TRY(gp_device_set(cur));
  if (json) printf("\n  ]\n}\n");
  if (count == 0 && !json)
    printf("no %s device answered (%s)\n", gp_backend_name(), gp_status_name(s));
out:
  return rc;
}
