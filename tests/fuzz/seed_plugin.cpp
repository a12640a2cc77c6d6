// The smallest library the plugin file inspection judges usable: one exported entry point name
// (discovery reads symbol names, never values). Built with -nostdlib into the ELF reader's seed
// corpus by tests/fuzz/CMakeLists.txt; never loaded.
extern "C" __attribute__((visibility("default"))) const int ppb_memory_model_v1_2 = 0;
