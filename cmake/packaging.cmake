# What `make install` and the Debian package (CPack, DEB generator) hold:
# the two binaries, desktop integration, the sample trace with its credit,
# the example configs, the documentation, manual pages generated from
# --help, bash completion. docs/packaging.md explains it;
# packaging/check-deb.sh builds, lints, installs and smoke-tests the package.
#
#   cmake --build build/x && (cd build/x && cpack -G DEB)
include(GNUInstallDirs)

set(BATCHPILOT_PACKAGING_DIR ${PROJECT_SOURCE_DIR}/packaging)
set(BATCHPILOT_SAMPLE_TRACE ${PROJECT_SOURCE_DIR}/resources/traces/azure_llm_conv_2023.csv
    CACHE FILEPATH "The Azure LLM conversation trace, installed to share/batchpilot/traces (empty: none)")

# --- Bundled data ------------------------------------------------------------
# The build tree gets the installed layout under share/batchpilot, so that
# app/batchpilot finds it as ../share/batchpilot like an installed binary
# does (app/data_paths.h); configure_file re-copies when a source changes.
set(BATCHPILOT_BUILD_SHARE ${CMAKE_BINARY_DIR}/share/batchpilot)
file(GLOB BATCHPILOT_CONFIGS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/resources/configs/*.json)
foreach(config ${BATCHPILOT_CONFIGS})
  get_filename_component(name ${config} NAME)
  configure_file(${config} ${BATCHPILOT_BUILD_SHARE}/configs/${name} COPYONLY)
endforeach()
install(FILES ${BATCHPILOT_CONFIGS} DESTINATION ${CMAKE_INSTALL_DATADIR}/batchpilot/configs)
if(BATCHPILOT_SAMPLE_TRACE AND EXISTS ${BATCHPILOT_SAMPLE_TRACE})
  configure_file(${BATCHPILOT_SAMPLE_TRACE} ${BATCHPILOT_BUILD_SHARE}/traces/azure_llm_conv_2023.csv COPYONLY)
  configure_file(${BATCHPILOT_PACKAGING_DIR}/traces/README ${BATCHPILOT_BUILD_SHARE}/traces/README COPYONLY)
  install(FILES ${BATCHPILOT_SAMPLE_TRACE} DESTINATION ${CMAKE_INSTALL_DATADIR}/batchpilot/traces
          RENAME azure_llm_conv_2023.csv)
  install(FILES ${BATCHPILOT_PACKAGING_DIR}/traces/README DESTINATION ${CMAKE_INSTALL_DATADIR}/batchpilot/traces)
elseif(BATCHPILOT_SAMPLE_TRACE)
  message(WARNING "Sample trace ${BATCHPILOT_SAMPLE_TRACE} not found: neither the build tree nor the package "
                  "will have it (import-trace --sample and the console's first-run offer need it)")
endif()

# --- Desktop integration -----------------------------------------------------
if(BATCHPILOT_CONSOLE)
  install(FILES ${BATCHPILOT_PACKAGING_DIR}/batchpilot.desktop DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
  install(FILES ${BATCHPILOT_PACKAGING_DIR}/icons/batchpilot.svg
          DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps)
  install(FILES ${BATCHPILOT_PACKAGING_DIR}/io.batchpilot.BatchPilot.metainfo.xml
          DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo)
endif()

# --- Documentation: copyright, changelog, README and docs ---------------------
set(BATCHPILOT_DOCDIR ${CMAKE_INSTALL_DATADIR}/doc/batchpilot) # Debian's name, not GNUInstallDirs' BatchPilot
find_program(GZIP_PROGRAM gzip)
set(BATCHPILOT_CHANGELOG_GZ ${CMAKE_BINARY_DIR}/packaging/changelog.gz)
# -9n: maximum compression, no name or time stamp in the header (lintian).
add_custom_command(OUTPUT ${BATCHPILOT_CHANGELOG_GZ}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/packaging
  COMMAND ${GZIP_PROGRAM} -9n -c ${BATCHPILOT_PACKAGING_DIR}/debian/changelog > ${BATCHPILOT_CHANGELOG_GZ}
  DEPENDS ${BATCHPILOT_PACKAGING_DIR}/debian/changelog
  COMMENT "Compressing the Debian changelog")
add_custom_target(batchpilot_changelog ALL DEPENDS ${BATCHPILOT_CHANGELOG_GZ})
install(FILES ${BATCHPILOT_PACKAGING_DIR}/debian/copyright DESTINATION ${BATCHPILOT_DOCDIR})
install(FILES ${BATCHPILOT_CHANGELOG_GZ} DESTINATION ${BATCHPILOT_DOCDIR})
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${BATCHPILOT_DOCDIR})
file(GLOB BATCHPILOT_DOCS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES ${BATCHPILOT_DOCS} DESTINATION ${BATCHPILOT_DOCDIR}/docs)

# --- Manual pages, generated from --help at build time -------------------------
# help2man runs the built binaries (no display needed), so the pages say what
# the programs say. Without help2man there are no pages (and lintian says so).
find_program(HELP2MAN help2man)
if(HELP2MAN AND GZIP_PROGRAM)
  set(BATCHPILOT_MAN_DIR ${CMAKE_BINARY_DIR}/man)
  set(pages ${BATCHPILOT_MAN_DIR}/batchpilot-bench.1)
  set(programs $<TARGET_FILE:batchpilot-bench>)
  set(targets batchpilot-bench)
  if(BATCHPILOT_CONSOLE)
    list(APPEND pages ${BATCHPILOT_MAN_DIR}/batchpilot.1)
    list(APPEND programs $<TARGET_FILE:batchpilot>)
    list(APPEND targets batchpilot)
  endif()
  set(gz_pages ${pages})
  list(TRANSFORM gz_pages APPEND .gz)
  add_custom_command(OUTPUT ${pages} ${gz_pages}
    COMMAND ${CMAKE_COMMAND} -E env QT_QPA_PLATFORM=offscreen
            ${BATCHPILOT_PACKAGING_DIR}/make-manpages.sh ${BATCHPILOT_MAN_DIR} ${BATCHPILOT_PACKAGING_DIR}/man
            ${programs}
    DEPENDS ${targets} ${BATCHPILOT_PACKAGING_DIR}/make-manpages.sh ${BATCHPILOT_PACKAGING_DIR}/man/batchpilot.h2m
            ${BATCHPILOT_PACKAGING_DIR}/man/batchpilot-bench.h2m
    COMMENT "Generating the manual pages from --help (help2man)")
  add_custom_target(batchpilot_manpages ALL DEPENDS ${pages} ${gz_pages})
  install(FILES ${gz_pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
else()
  message(WARNING "help2man or gzip not found: no manual pages (packaging/install-deps.sh installs help2man)")
endif()

# --- Bash completion ---------------------------------------------------------
# One script serves both programs; bash-completion loads a file named after
# the command, so it is installed under both names.
install(FILES ${BATCHPILOT_PACKAGING_DIR}/completion/batchpilot
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
install(FILES ${BATCHPILOT_PACKAGING_DIR}/completion/batchpilot
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME batchpilot-bench)

# batchpilot-bench --version (help2man reads it); set here so that the
# bench's own CMakeLists.txt stays the benchmarks'.
target_compile_definitions(batchpilot-bench PRIVATE BATCHPILOT_VERSION="${PROJECT_VERSION}")

# --- libtorch, carried inside the package --------------------------------------
# Debian 12 has no libtorch newer than 1.13 and no CUDA 13, so the package
# carries the libtorch it was built against (PyPI's torch wheel, unpacked by
# packaging/install-torch.sh) in the private folder /usr/lib/batchpilot, where
# the binaries' RUNPATH ($ORIGIN/../lib/batchpilot) finds it. Split in two:
#   core (package batchpilot): libtorch_cpu, libc10 and the wheel's libgomp,
#     plus the two small CUDA runtime libraries libtorch_cpu itself links
#     (libcudart, libcupti: redistributable under the CUDA EULA), so the CPU
#     engine runs on any Debian 12 machine;
#   cuda (package batchpilot-cuda): the CUDA plugin (libbatchpilot_cuda.so,
#     loaded only when a CUDA device is asked for) with libtorch_cuda and
#     libc10_cuda; the CUDA 13 libraries those link (cuBLAS, cuDNN, NCCL, ...)
#     come from NVIDIA's CUDA repository or toolkit (docs/packaging.md).
set(BATCHPILOT_PRIVATE_LIBDIR lib/batchpilot) # not the multiarch folder: private to the package, as RUNPATH says
if(BATCHPILOT_TORCH AND TORCH_INSTALL_PREFIX AND EXISTS ${TORCH_INSTALL_PREFIX}/lib/libtorch_cpu.so)
  set(_bp_torch_lib ${TORCH_INSTALL_PREFIX}/lib)
  # bp_install_library(FILE COMPONENT): the real file under its own (soname) name.
  # The wheel's libraries keep their symbol tables (CPack strips only what the
  # build made): stripped as they are installed, ~10% smaller, and lintian's
  # unstripped-binary-or-object satisfied.
  function(bp_install_library file component)
    get_filename_component(_name ${file} NAME)
    get_filename_component(_real ${file} REALPATH)
    install(FILES ${_real} DESTINATION ${BATCHPILOT_PRIVATE_LIBDIR} RENAME ${_name} COMPONENT ${component})
    if(CMAKE_STRIP)
      install(CODE "execute_process(COMMAND \"${CMAKE_STRIP}\" --strip-unneeded --remove-section=.comment
                      \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${BATCHPILOT_PRIVATE_LIBDIR}/${_name}\")"
              COMPONENT ${component})
    endif()
  endfunction()
  foreach(lib libtorch_cpu.so libc10.so libgomp.so.1)
    if(EXISTS ${_bp_torch_lib}/${lib})
      bp_install_library(${_bp_torch_lib}/${lib} core)
    endif()
  endforeach()
  # The CUDA runtime pieces libtorch_cpu.so needs (NEEDED, not dlopen'ed):
  # from the CUDA toolkit the build used, or the wheel's nvidia/ folders.
  get_filename_component(_bp_site ${TORCH_INSTALL_PREFIX}/.. ABSOLUTE)
  foreach(soname libcudart.so.13 libcupti.so.13)
    find_file(_bp_found_${soname} ${soname} NO_CACHE
              PATHS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64
                    ${_bp_site}/nvidia/cu13/lib NO_DEFAULT_PATH)
    if(_bp_found_${soname})
      bp_install_library(${_bp_found_${soname}} core)
    else()
      message(WARNING "${soname} not found: the package will not run where the CUDA toolkit is not installed")
    endif()
  endforeach()
  foreach(lib libtorch_cuda.so libc10_cuda.so libtorch_nvshmem.so)
    if(EXISTS ${_bp_torch_lib}/${lib})
      bp_install_library(${_bp_torch_lib}/${lib} cuda)
    endif()
  endforeach()
  # The wheel's own license and notices (the libraries libtorch bundles).
  file(GLOB _bp_torch_notices ${_bp_site}/torch-*.dist-info/licenses/*)
  install(FILES ${_bp_torch_notices} DESTINATION ${BATCHPILOT_DOCDIR}/libtorch COMPONENT core)
endif()
# lintian overrides, each with its reason in the file.
install(FILES ${BATCHPILOT_PACKAGING_DIR}/debian/lintian-overrides/batchpilot
        DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides COMPONENT core)
# Each package has its own copyright file and changelog (Debian policy 12.5).
install(FILES ${BATCHPILOT_PACKAGING_DIR}/debian/copyright ${BATCHPILOT_CHANGELOG_GZ}
        DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/batchpilot-cuda COMPONENT cuda)

# --- The Debian package --------------------------------------------------------
set(CPACK_PACKAGE_NAME batchpilot)
set(CPACK_PACKAGE_VENDOR "The BatchPilot developers")
set(CPACK_PACKAGE_CONTACT "The BatchPilot developers <batchpilot@example.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "live batching console for transformer inference")
# Extended description: lines under 80 columns (lintian); CPack indents them.
set(CPACK_PACKAGE_DESCRIPTION [=[BatchPilot batches inference requests in an embedded engine (libtorch)
and lets an operator change batch size, queue delay and length buckets
live while watching latency and throughput. Sessions are logged to
SQLite, replayed under other settings and exported as reports.
.
The package includes batchpilot-bench, a sample production trace (Azure
LLM inference trace 2023, CC-BY 4.0) and example batching configs.]=])
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT) # batchpilot_0.1.0_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE ${PROJECT_HOMEPAGE_URL})
# Library dependencies come from dpkg-shlibdeps (dpkg-dev); these are the
# run-time needs it cannot see: the OpenMP OpenBLAS that makes Debian's
# libtorch ~10x faster than the reference BLAS it would otherwise get
# (docs/benchmarks.md), Qt's platform plugins (xcb for the console,
# offscreen for `batchpilot report` and the tests) and the report's font.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The libraries the package carries itself are no dependency to look up.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${BATCHPILOT_PRIVATE_LIBDIR})
# xz on every core: libtorch_cpu alone is ~450 MB; xz packs it to ~75 MB in
# ~50 s on 2 cores (gzip: 120 MB in 14 s). Bookworm's lintian refuses zstd
# members (malformed-deb-archive).
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
set(CPACK_THREADS 0)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL core)
set(CPACK_DEBIAN_CORE_PACKAGE_NAME batchpilot)
# A component package's extended description is its component's (the
# synopsis stays CPACK_PACKAGE_DESCRIPTION_SUMMARY).
set(CPACK_COMPONENT_CORE_DESCRIPTION "${CPACK_PACKAGE_DESCRIPTION}")
set(CPACK_DEBIAN_CORE_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_CORE_PACKAGE_DEPENDS "qt6-qpa-plugins, fonts-dejavu-core")
set(CPACK_DEBIAN_CORE_PACKAGE_SUGGESTS "batchpilot-cuda, poppler-utils, bash-completion")
if(BATCHPILOT_TORCH_CUDA)
  list(APPEND CPACK_COMPONENTS_ALL cuda)
  set(CPACK_DEBIAN_CUDA_PACKAGE_NAME batchpilot-cuda)
  set(CPACK_DEBIAN_CUDA_FILE_NAME DEB-DEFAULT)
  set(CPACK_DEBIAN_CUDA_PACKAGE_SECTION science)
  # No Debian 12 package ships the CUDA 13 libraries libtorch_cuda links:
  # dpkg-shlibdeps could not name them, so the package declares batchpilot
  # and says in its description (and docs/packaging.md) where CUDA comes from.
  set(CPACK_DEBIAN_CUDA_PACKAGE_SHLIBDEPS OFF)
  # The C and C++ runtime the CUDA libraries link, as dpkg-shlibdeps names them
  # for the core package.
  set(CPACK_DEBIAN_CUDA_PACKAGE_DEPENDS
      "batchpilot (= ${PROJECT_VERSION}), libc6 (>= 2.34), libgcc-s1 (>= 4.2), libstdc++6 (>= 12)")
  # (CPack gives every package the one synopsis; the text says which part.)
  set(CPACK_COMPONENT_CUDA_DESCRIPTION [=[BatchPilot's NVIDIA GPU support: the engine's CUDA plugin (paged
attention kernels, CUDA graphs) and the CUDA half of libtorch. BatchPilot
loads it only when a CUDA device is asked for (--device auto or cuda). It
needs an NVIDIA driver and the CUDA 13.0 runtime libraries (cuBLAS,
cuDNN 9, NCCL, cuSPARSE, cuFFT, cuRAND, cuFile, cuSPARSELt, NVSHMEM) from
NVIDIA's CUDA repository or toolkit.]=])
endif()
include(CPack)
