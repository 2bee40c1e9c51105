# Finds Loom's dependencies (all from Debian; scripts/setup installs them) and auto-detects the
# optional ones. Each optional feature prints one line saying what was found.
find_package(Threads REQUIRED)
find_package(Boost 1.74 REQUIRED)
find_package(tomlplusplus REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(CLI11 REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(dlpack REQUIRED)

# --- optional: MPI --------------------------------------------------------------------------
find_package(MPI QUIET COMPONENTS CXX)
set(_loom_mpi_default OFF)
if(MPI_CXX_FOUND)
  set(_loom_mpi_default ON)
endif()
option(LOOM_WITH_MPI "Build the MPI communicator" ${_loom_mpi_default})
if(LOOM_WITH_MPI AND NOT MPI_CXX_FOUND)
  message(FATAL_ERROR "LOOM_WITH_MPI=ON but MPI was not found (apt-get install libopenmpi-dev)")
endif()
if(LOOM_WITH_MPI)
  message(STATUS "Loom: MPI ${MPI_CXX_VERSION} found -> LOOM_WITH_MPI=ON")
else()
  message(STATUS "Loom: MPI not found or disabled -> LOOM_WITH_MPI=OFF")
endif()

# --- optional: CUDA -------------------------------------------------------------------------
include(CheckLanguage)
if(NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
endif()
check_language(CUDA)
set(_loom_cuda_default OFF)
if(CMAKE_CUDA_COMPILER)
  set(_loom_cuda_default ON)
endif()
option(LOOM_WITH_CUDA "Build the CUDA backend and NCCL communicator" ${_loom_cuda_default})
if(LOOM_WITH_CUDA)
  message(STATUS "Loom: CUDA compiler ${CMAKE_CUDA_COMPILER} found -> LOOM_WITH_CUDA=ON")
else()
  message(STATUS "Loom: no CUDA compiler found or disabled -> LOOM_WITH_CUDA=OFF")
endif()

# --- optional: GUI (Dear ImGui + GLFW + OpenGL 3 + libpng) -----------------------------------
# Debian's libimgui-dev ships the core as a library and the platform backends as sources under
# /usr/share/doc/libimgui-dev/examples/backends; gui/ compiles the GLFW and OpenGL3 ones.
find_package(glfw3 QUIET)
find_package(OpenGL QUIET COMPONENTS OpenGL)
find_package(PNG QUIET)
find_path(LOOM_IMGUI_INCLUDE_DIR imgui.h PATH_SUFFIXES imgui)
find_library(LOOM_IMGUI_LIBRARY imgui)
find_path(LOOM_IMGUI_BACKEND_SOURCE_DIR imgui_impl_glfw.cpp
          PATHS /usr/share/doc/libimgui-dev/examples/backends /usr/share/imgui/backends NO_DEFAULT_PATH)
set(_loom_gui_default OFF)
if(glfw3_FOUND AND OpenGL_OpenGL_FOUND AND PNG_FOUND AND LOOM_IMGUI_INCLUDE_DIR AND LOOM_IMGUI_LIBRARY
   AND LOOM_IMGUI_BACKEND_SOURCE_DIR)
  set(_loom_gui_default ON)
endif()
option(LOOM_WITH_GUI "Build loom-dash (Dear ImGui + GLFW + OpenGL 3)" ${_loom_gui_default})
if(LOOM_WITH_GUI AND NOT _loom_gui_default)
  message(FATAL_ERROR "LOOM_WITH_GUI=ON but GLFW, OpenGL, libpng or Dear ImGui (with its backend sources) was not "
                      "found (apt-get install libglfw3-dev libgl-dev libpng-dev libimgui-dev)")
endif()
if(LOOM_WITH_GUI)
  message(STATUS "Loom: GLFW, OpenGL, libpng and Dear ImGui found -> LOOM_WITH_GUI=ON")
else()
  message(STATUS "Loom: GLFW, OpenGL, libpng or Dear ImGui not found or disabled -> LOOM_WITH_GUI=OFF")
endif()
