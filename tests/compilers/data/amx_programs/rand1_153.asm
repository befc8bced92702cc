.target amx
.input 0 @64 s32[5,1]
.input 1 @128 s32[5,1]
.output 0 @192 f32[]
.const @192 24508846
