# Extra libraries of host sources, appended by their owners (see host/CMakeLists.txt).

# HDF5 (Debian's libhdf5-dev, serial, C API): pretraining shard writer. OpenSSL (libssl-dev):
# SHA-256 for manifests.
find_package(HDF5 REQUIRED COMPONENTS C)
find_package(OpenSSL REQUIRED)
target_link_libraries(loom_host PUBLIC hdf5::hdf5 OpenSSL::Crypto)

# utf8proc (libutf8proc-dev, as tokenizer/wordpiece uses it): Unicode lower-casing and character
# classes of the official SQuAD answer normalisation (eval/squad_normalize.cpp).
find_library(LOOM_UTF8PROC_LIBRARY NAMES utf8proc REQUIRED)
find_path(LOOM_UTF8PROC_INCLUDE utf8proc.h REQUIRED)
target_include_directories(loom_host PRIVATE ${LOOM_UTF8PROC_INCLUDE})
target_link_libraries(loom_host PUBLIC ${LOOM_UTF8PROC_LIBRARY})
# The SQuAD scores must be Python's doubles bit for bit: no fused multiply-adds there.
set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/eval/squad_score.cpp
                            ${CMAKE_CURRENT_SOURCE_DIR}/eval/squad_decode.cpp
                            PROPERTIES COMPILE_OPTIONS -ffp-contract=off)
