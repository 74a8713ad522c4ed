# Finds LibTorch inside a Python torch package, as torch.utils.cpp_extension users do.
#   -DTorch_DIR=...            an explicit TorchConfig.cmake folder wins;
#   -DPASSCHECK_PYTHON=/p/python  the interpreter whose torch to use;
#   default                     the project's virtual environment, .venv/bin/python.
# Sets PASSCHECK_TORCH_VERSION (the Python package's version string, e.g. 2.15.0+cu130),
# PASSCHECK_TORCH_INCLUDE_DIR and PASSCHECK_PYTHON (recorded for the Python bridge's tests).
set(PASSCHECK_PYTHON "${PROJECT_SOURCE_DIR}/.venv/bin/python" CACHE FILEPATH
    "Python interpreter whose torch package provides LibTorch")
if(NOT Torch_DIR)
  if(NOT EXISTS "${PASSCHECK_PYTHON}")
    message(FATAL_ERROR "passcheck: no Python at ${PASSCHECK_PYTHON}. Run ci/bootstrap.sh (it creates .venv with the "
                        "pinned torch), or pass -DPASSCHECK_PYTHON=/path/to/python or -DTorch_DIR=/path/to/TorchConfig")
  endif()
  execute_process(
    COMMAND "${PASSCHECK_PYTHON}" -c "import torch, torch.utils; print(torch.utils.cmake_prefix_path); print(torch.__version__)"
    OUTPUT_VARIABLE _passcheck_torch_out ERROR_VARIABLE _passcheck_torch_err RESULT_VARIABLE _passcheck_torch_rc
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _passcheck_torch_rc EQUAL 0)
    message(FATAL_ERROR "passcheck: ${PASSCHECK_PYTHON} cannot import torch:\n${_passcheck_torch_err}")
  endif()
  string(REPLACE "\n" ";" _passcheck_torch_out "${_passcheck_torch_out}")
  list(GET _passcheck_torch_out 0 _passcheck_torch_prefix)
  list(GET _passcheck_torch_out 1 _passcheck_torch_version)
  set(PASSCHECK_TORCH_VERSION "${_passcheck_torch_version}" CACHE INTERNAL "torch version of the Python that gave Torch_DIR")
  set(Torch_DIR "${_passcheck_torch_prefix}/Torch" CACHE PATH "TorchConfig.cmake folder" FORCE)
endif()

# passcheck compiles no CUDA kernels of its own (its CUDA code is host C++ over LibTorch);
# naming an architecture spares LibTorch's config a GPU probe (and a CUDA-language test
# project) on machines without one.
if(NOT DEFINED TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  set(TORCH_CUDA_ARCH_LIST "9.0")
endif()

find_package(Torch REQUIRED)
get_filename_component(PASSCHECK_TORCH_INCLUDE_DIR "${Torch_DIR}/../../../include" ABSOLUTE)
get_filename_component(PASSCHECK_TORCH_LIB_DIR "${Torch_DIR}/../../../lib" ABSOLUTE)
if(NOT PASSCHECK_TORCH_VERSION)
  set(PASSCHECK_TORCH_VERSION "${Torch_VERSION}")
endif()

# A CUDA wheel's LibTorch needs the CUDA libraries of the wheel's nvidia-* packages (their
# RUNPATH finds them at run time). At link time the linker must see those too, not an
# older copy of the same soname on the machine (NCCL in /usr/local/cuda, say).
get_filename_component(_passcheck_site_packages "${PASSCHECK_TORCH_INCLUDE_DIR}/../.." ABSOLUTE)
file(GLOB _passcheck_nvidia_lib_dirs LIST_DIRECTORIES true "${_passcheck_site_packages}/nvidia/*/lib"
     "${_passcheck_site_packages}/nvidia/cu*/lib")
set(PASSCHECK_TORCH_LINK_DIRS "")
foreach(_dir ${_passcheck_nvidia_lib_dirs})
  if(IS_DIRECTORY "${_dir}")
    add_link_options("LINKER:-rpath-link,${_dir}")
    list(APPEND PASSCHECK_TORCH_LINK_DIRS "${_dir}")
  endif()
endforeach()
