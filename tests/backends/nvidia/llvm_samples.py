"""Hand-written LLVM IR kernels for the toolchain and launcher tests (no frontend involved)."""

VECTOR_ADD = """
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()

define ptx_kernel void @add_kernel(ptr addrspace(1) %x, ptr addrspace(1) %y, ptr addrspace(1) %out, i32 %n) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ctaid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %base = mul i32 %ctaid, %ntid
  %i = add i32 %base, %tid
  %inb = icmp slt i32 %i, %n
  br i1 %inb, label %body, label %exit
body:
  %idx = sext i32 %i to i64
  %px = getelementptr float, ptr addrspace(1) %x, i64 %idx
  %py = getelementptr float, ptr addrspace(1) %y, i64 %idx
  %po = getelementptr float, ptr addrspace(1) %out, i64 %idx
  %vx = load float, ptr addrspace(1) %px
  %vy = load float, ptr addrspace(1) %py
  %s = fadd float %vx, %vy
  store float %s, ptr addrspace(1) %po
  br label %exit
exit:
  ret void
}
"""

# out[i] = x[i] * scale + bias for i < n: scalar parameters of several widths (i64, fp32, i8)
SCALE_BIAS = """
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()

define ptx_kernel void @scale_bias(ptr addrspace(1) %x, i8 %flag, float %scale, ptr addrspace(1) %out, i64 %n, double %bias) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ctaid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %base = mul i32 %ctaid, %ntid
  %i32 = add i32 %base, %tid
  %i = sext i32 %i32 to i64
  %inb = icmp slt i64 %i, %n
  br i1 %inb, label %body, label %exit
body:
  %px = getelementptr float, ptr addrspace(1) %x, i64 %i
  %po = getelementptr float, ptr addrspace(1) %out, i64 %i
  %vx = load float, ptr addrspace(1) %px
  %m = fmul float %vx, %scale
  %b = fptrunc double %bias to float
  %f = sitofp i8 %flag to float
  %bf = fmul float %b, %f
  %r = fadd float %m, %bf
  store float %r, ptr addrspace(1) %po
  br label %exit
exit:
  ret void
}
"""

# writes 4 TiB past its argument: an illegal address on a real GPU
WILD_STORE = """
define ptx_kernel void @wild_store(ptr addrspace(1) %out) {
entry:
  %p = getelementptr float, ptr addrspace(1) %out, i64 1099511627776
  store volatile float 1.0, ptr addrspace(1) %p
  ret void
}
"""

# with debug locations: PTX gets .file/.loc lines
WITH_LOCATIONS = """
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()

define ptx_kernel void @located(ptr addrspace(1) %out) !dbg !5 {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x(), !dbg !8
  %idx = sext i32 %tid to i64, !dbg !8
  %p = getelementptr float, ptr addrspace(1) %out, i64 %idx, !dbg !9
  %f = sitofp i32 %tid to float, !dbg !9
  store float %f, ptr addrspace(1) %p, !dbg !9
  ret void, !dbg !9
}

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!3, !4}
!0 = distinct !DICompileUnit(language: DW_LANG_C, file: !1, producer: "kernellab", isOptimized: true, runtimeVersion: 0, emissionKind: LineTablesOnly)
!1 = !DIFile(filename: "kernel.py", directory: "/tmp")
!3 = !{i32 2, !"Debug Info Version", i32 3}
!4 = !{i32 2, !"Dwarf Version", i32 4}
!5 = distinct !DISubprogram(name: "located", linkageName: "located", scope: !1, file: !1, line: 10, type: !6, scopeLine: 10, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0)
!6 = !DISubroutineType(types: !7)
!7 = !{}
!8 = !DILocation(line: 11, column: 5, scope: !5)
!9 = !DILocation(line: 12, column: 9, scope: !5)
"""

# dynamic shared memory beyond the default 48 KB: each thread writes its id near the end of a
# 64 KB buffer, and after a barrier reads its right neighbour's (out[t] = (t + 1) % 128)
SHARED_64K = """
; kernellab: {"name": "smem_kernel", "num_warps": 4, "shared": 65536}
@global_smem = external addrspace(3) global [0 x i8], align 16

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare void @llvm.nvvm.barrier0()

define ptx_kernel void @smem_kernel(ptr addrspace(1) %out) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %slot = add i32 %tid, 16000
  %p = getelementptr float, ptr addrspace(3) @global_smem, i32 %slot
  %f = sitofp i32 %tid to float
  store float %f, ptr addrspace(3) %p
  call void @llvm.nvvm.barrier0()
  %next = add i32 %tid, 1
  %wrapped = and i32 %next, 127
  %nslot = add i32 %wrapped, 16000
  %q = getelementptr float, ptr addrspace(3) @global_smem, i32 %nslot
  %v = load float, ptr addrspace(3) %q
  %idx = zext i32 %tid to i64
  %o = getelementptr float, ptr addrspace(1) %out, i64 %idx
  store float %v, ptr addrspace(1) %o
  ret void
}
"""
