
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE ThreadNames (nameId INTEGER, priority INTEGER, globalTid INTEGER);
CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER, id INTEGER, name TEXT, busLocation TEXT, smCount INTEGER);
CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT);
CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, eventClass INTEGER,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER, returnValue INTEGER, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER,
  contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER, shortName INTEGER, gridX INTEGER, gridY INTEGER, gridZ INTEGER,
  blockX INTEGER, blockY INTEGER, blockZ INTEGER, registersPerThread INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, deviceId INTEGER,
  contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, bytes INTEGER,
  copyKind INTEGER, srcKind INTEGER, dstKind INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER, end INTEGER, deviceId INTEGER,
  contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, value INTEGER,
  bytes INTEGER, memKind INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER, end INTEGER, deviceId INTEGER,
  contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER,
  syncType INTEGER, eventId INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, rangeId INTEGER,
  category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER,
  textId INTEGER, domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL,
  uint32Value INTEGER, int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
CREATE TABLE CUDA_CALLCHAINS (id INTEGER, symbol INTEGER, module INTEGER, stackDepth INTEGER,
  PRIMARY KEY (id, stackDepth));
CREATE TABLE OSRT_API (start INTEGER, end INTEGER, eventClass INTEGER, globalTid INTEGER,
  nameId INTEGER, returnValue INTEGER, nestingLevel INTEGER, callchainId INTEGER);
CREATE TABLE OSRT_CALLCHAINS (id INTEGER, symbol INTEGER, module INTEGER, stackDepth INTEGER,
  PRIMARY KEY (id, stackDepth));
CREATE TABLE COMPOSITE_EVENTS (id INTEGER PRIMARY KEY, start INTEGER, cpu INTEGER,
  threadState INTEGER, globalTid INTEGER, cpuCycles INTEGER);
CREATE TABLE SAMPLING_CALLCHAINS (id INTEGER, symbol INTEGER, module INTEGER, stackDepth INTEGER,
  PRIMARY KEY (id, stackDepth));
CREATE TABLE SCHED_EVENTS (start INTEGER, cpu INTEGER, isSchedIn INTEGER, globalTid INTEGER);
CREATE TABLE PROFILER_OVERHEAD (start INTEGER, end INTEGER, globalTid INTEGER, nameId INTEGER,
  returnValue INTEGER);

INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), (2, 'cudaMemcpyAsync_v3020'),
  (3, 'void gemm<float>(float*, int)'), (4, 'gemm'), (5, 'cuLaunchKernel'),
  (6, 'cudaStreamSynchronize_v3020'), (7, 'main'), (8, 'worker'), (9, 'cudaMemsetAsync_v3020'),
  (10, 'registered inner'), (11, 'unused thread'), (12, 'cudaMalloc'), (13, 'libcudart.so'),
  (14, 'app'), (15, '0x7f00dead'), (16, 'libcuda.so'), (17, 'cudaFree'), (18, 'write'),
  (19, 'libc.so.6'), (20, 'flush'), (21, 'sample_leaf'), (22, 'CUDA profiling initialization');
INSERT INTO PROCESSES VALUES ((1<<48)|(100<<24), 100, 'trainer'), ((1<<48)|(200<<24), 200, 'trainer'),
  ((1<<48)|(300<<24), 300, 'idle');
INSERT INTO ThreadNames VALUES (7, 10, (1<<48)|(100<<24)|101), (8, 10, (1<<48)|(200<<24)|201),
  (11, 10, (1<<48)|(300<<24)|301), (8, 10, (1<<48)|(100<<24)|103);
INSERT INTO TARGET_INFO_GPU VALUES (1<<48, 0, 'NVIDIA H100 80GB HBM3', '0000:18:00.0', 132),
  (1<<48, 1, 'NVIDIA H100 80GB HBM3', '0000:2a:00.0', 132);
INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1700000000000000000, '2023-11-14T22:13:20', '');
INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_VERSION', '2024.5.1.113'),
  ('EXPORT_SCHEMA_VERSION', '3.13.2'), ('EXPORT_PARAM_TIME_NORMALIZE', 'false');

INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
  (1000, 1500, 0, (1<<48)|(100<<24)|101, 1, 1, 0, NULL),
  (1600, 1900, 0, (1<<48)|(100<<24)|101, 2, 2, 0, NULL),
  (2000, 2100, 0, (1<<48)|(100<<24)|101, 3, 9, 0, NULL),
  (2200, 6100, 0, (1<<48)|(100<<24)|101, 4, 6, 0, NULL),
  (1000, 1400, 0, (1<<48)|(200<<24)|201, 1, 1, 0, NULL),
  (3000, 3100, 1, (1<<48)|(200<<24)|201, 2, 5, 0, NULL),
  (5000, 5100, 0, (1<<48)|(100<<24)|101, 5, 12, 2, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
  (2000, 5000, 0, 1, 7, 1, (1<<48)|(100<<24), 3, 4, 128, 1, 1, 256, 1, 1, 32),
  (1800, 2500, 1, 2, 7, 1, (1<<48)|(200<<24), 3, 4, 64, 2, 1, 128, 1, 1, 40),
  (3500, 4000, 0, 3, 14, 2, (1<<48)|(200<<24), 4, 4, 1, 1, 1, 32, 1, 1, 16),
  (100, 900, 1, 2, 7, 99, (1<<48)|(200<<24), 3, 4, 1, 1, 1, 1, 1, 1, 8),
  (4500, 5500, 0, 1, 7, NULL, (1<<48)|(100<<24), 4, 4, 1, 1, 1, 1, 1, 1, 8);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES
  (5000, 6000, 0, 1, 7, 2, (1<<48)|(100<<24), 1048576, 1, 0, 2);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES
  (2200, 2300, 0, 1, 13, 3, (1<<48)|(100<<24), 0, 4096, 2);
INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES
  (2210, 6090, 0, 1, 7, 4, (1<<48)|(100<<24), 3, 0);
