.target amx
.input 0 @64 s8[2,4,1]
.output 0 @128 pred[]
.const @128 00
