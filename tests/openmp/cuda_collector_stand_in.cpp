// cuda_collector_stand_in.cpp — a library named like CUDA's collector
// (libferret_cupti.so, in a folder of its own) and nothing else: preloaded
// into an OpenMP program, it tells the OpenMP collector that CUPTI's records
// are the device's truth, without a GPU (ompt_test, "cuda_collector_present").
