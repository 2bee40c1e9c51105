# Extra libraries of host sources, appended by their owners (see host/CMakeLists.txt).

# HDF5 (Debian's libhdf5-dev, serial, C API): pretraining shard writer. OpenSSL (libssl-dev):
# SHA-256 for manifests.
find_package(HDF5 REQUIRED COMPONENTS C)
find_package(OpenSSL REQUIRED)
target_link_libraries(loom_host PUBLIC hdf5::hdf5 OpenSSL::Crypto)
