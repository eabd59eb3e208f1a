# CPack's DEB generator, one package per install component (see ../CMakeLists.txt).
# scripts/package runs it; tests/package/deb_install_test.sh installs what it makes.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME mantissa)
set(CPACK_PACKAGE_VENDOR "Mantissa")
set(CPACK_PACKAGE_CONTACT "${MANTISSA_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${MANTISSA_DEB_MAINTAINER}")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/packages)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# CPackDeb puts a project-wide summary in front of every package's description unless it is
# CPack's own default; the two packages carry their own summary lines (below), so it stays
# the default.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${CMAKE_PROJECT_NAME} built using CMake")

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL app dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT) # <package>_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_RELEASE ${MANTISSA_DEB_RELEASE})
set(CPACK_DEBIAN_PACKAGE_SOURCE ${MANTISSA_DEB_SOURCE})
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Installed files are stripped (lintian: unstripped-binary-or-object), and the package
# control files get the permissions dpkg-deb would give them.
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

# mantissa: the programs. dpkg-shlibdeps reads their shared-library needs (Qt, zlib, ...);
# what it cannot see is listed: oneDNN (opened with dlopen on first use,
# engine/backend/cpu/onednn_library.h), Qt's SQLite driver and platform plugins (loaded as
# plugins) and the default dataset. Fortunes is the text presets' default corpus.
set(CPACK_DEBIAN_APP_PACKAGE_NAME mantissa)
set(CPACK_DEBIAN_APP_PACKAGE_SECTION science)
set(CPACK_DEBIAN_APP_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_APP_PACKAGE_DEPENDS "libdnnl2 (>= 2.6), libqt6sql6-sqlite, qt6-qpa-plugins, dataset-fashion-mnist")
set(CPACK_DEBIAN_APP_PACKAGE_RECOMMENDS "fortunes")
# The CUDA plugin needs cuBLAS and cuDNN, which no Debian package provides: dpkg-shlibdeps is
# shown where they are (they need not be on the loader's path, as on a CI machine with the
# toolkit mounted at /usr/local/cuda) and, finding no package for them, adds no dependency,
# since CUDA is optional at run time.
if(TARGET mantissa_cuda)
  get_filename_component(_cudnn_dir ${MANTISSA_CUDNN_LIBRARY} DIRECTORY)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CUDAToolkit_LIBRARY_DIR} ${_cudnn_dir})
endif()
set(CPACK_DEBIAN_APP_DESCRIPTION "workbench for mixed-precision neural-network training
Mantissa trains neural networks in fp32, fp16, bf16 and smaller formats
and shows what each precision does: loss curves, the loss-scale history,
every overflow step and the parameter that caused it, and per-layer
histograms of the tensors' exponents. fp16 and bf16 values are rounded
bit-exactly on the CPU, so the underflow and overflow it shows are the
ones that happened. Every run is kept in a SQLite database, and reports
come out as PDF, HTML or Markdown.

This package holds the desktop workbench (mantissa), the command-line
tool for training, sweeps and reports (mantissa-cli), their man pages
and the documentation. Training runs on the CPU; the CUDA backend, where
the package was built with it, is loaded when CUDA's cuBLAS and cuDNN
libraries are installed.")

# mantissa-dev: what a program embedding Mantissa builds against. It depends on exactly this
# version of mantissa and on the -dev packages the installed CMake package finds.
set(CPACK_DEBIAN_DEV_PACKAGE_NAME mantissa-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_COMPONENT_DEV_DEPENDS app)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "qt6-base-dev, libdnnl-dev, ocl-icd-opencl-dev, zlib1g-dev, libpng-dev, libjpeg62-turbo-dev, libminizip-dev, \
nlohmann-json3-dev, libqcustomplot-dev, libgsl-dev")
# The static engine links MPI's C library when built with it (MantissaConfig finds MPI then).
if(MANTISSA_HAVE_MPI)
  string(APPEND CPACK_DEBIAN_DEV_PACKAGE_DEPENDS ", libopenmpi-dev")
endif()
set(CPACK_DEBIAN_DEV_DESCRIPTION "workbench for mixed-precision training - development files
Mantissa trains neural networks in fp32, fp16, bf16 and smaller formats
and shows what each precision does to training.

This package holds the headers, the libraries and the CMake package with
which a program embeds Mantissa: find_package(Mantissa) gives its
training engine and, for Qt applications, the workbench widget, the run
store and the reports.")
include(CPack)
