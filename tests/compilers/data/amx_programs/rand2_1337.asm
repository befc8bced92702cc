.target amx
.input 0 @64 f32[]
.output 0 @128 bf16[8]
.const @128 a643a643a64376be803fc0ff023c4c3d
